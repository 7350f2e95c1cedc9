package auditimport

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/releases"
)

// Kueue run as a component: its writes to the TrainJobs are left out like
// the Trainer's, and replay runs it (spec.components) with the queues the
// TrainJobs were admitted through (spec.queues), made from the log's
// LocalQueues, ClusterQueues, ResourceFlavors and WorkloadPriorityClasses
// (RecordPolicy records them at RequestResponse).

const (
	kueueGroup         = "kueue.x-k8s.io"
	queueNameLabel     = "kueue.x-k8s.io/queue-name"
	priorityClassLabel = "kueue.x-k8s.io/priority-class"
)

// kueueObjects are Kueue's queueing objects as the log's last successful
// write of each left them, by resource and name (a LocalQueue's of the
// imported namespace only).
type kueueObjects map[string]map[string]map[string]any

// kueueResources are the resources kueueObjects keeps.
var kueueResources = []string{"localqueues", "clusterqueues", "resourceflavors", "workloadpriorityclasses"}

// observe keeps ev's object when ev wrote one of them successfully. A
// delete is not applied: a recorded run deletes its queues after its
// scenario, which used them.
func (k kueueObjects) observe(ev *event, namespace string) {
	ref := ev.ObjectRef
	if ref == nil || ref.APIGroup != kueueGroup || ref.Subresource != "" || !slices.Contains(kueueResources, ref.Resource) {
		return
	}
	if ref.Resource == "localqueues" && ref.Namespace != namespace {
		return
	}
	switch ev.Verb {
	case "create", "update", "patch":
	default:
		return
	}
	if ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 || ev.query("dryRun") != "" {
		return
	}
	obj := decodeObject(ev.ResponseObject)
	if obj == nil {
		return
	}
	name := metadataString(ev.ResponseObject, "name")
	if name == "" {
		return
	}
	if k[ref.Resource] == nil {
		k[ref.Resource] = map[string]map[string]any{}
	}
	k[ref.Resource][name] = obj
}

// kueueRan reports whether Kueue, as a component, wrote to the TrainJobs,
// or its webhook changed a write to them.
func kueueRan(writes []*write) bool {
	return slices.ContainsFunc(writes, func(w *write) bool {
		user, _ := w.ev.user()
		if w.kind != trainJobKind {
			return false
		}
		if identity.Who(user) == identity.Kueue {
			return true
		}
		for _, calls := range w.ev.webhookCalls() {
			if slices.ContainsFunc(calls, func(c webhookCall) bool { return c.Mutated && kueueConfiguration(c.Configuration) }) {
				return true
			}
		}
		return false
	})
}

// trainJobLabel is label key of the first of the TrainJobs' writes that
// sent it, "" none.
func trainJobLabel(writes []*write, key string) string {
	for _, w := range writes {
		if w.kind != trainJobKind || w.component {
			continue
		}
		var obj struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if json.Unmarshal(w.ev.RequestObject, &obj) == nil && obj.Metadata.Labels[key] != "" {
			return obj.Metadata.Labels[key]
		}
	}
	return ""
}

// kueue makes Kueue a component of the scenario, with its queues, when it
// acted on the TrainJobs; what the log lacks is said in notes.
func (b *builder) kueue(k kueueObjects, writes []*write) {
	if !kueueRan(writes) {
		return
	}
	spec := &b.res.Scenario.Spec
	spec.Components = append(spec.Components, releases.ComponentKueue)
	lq := trainJobLabel(writes, queueNameLabel)
	if lq == "" {
		b.note("Kueue wrote to the TrainJobs, which name no LocalQueue (label " + queueNameLabel + "): spec.queues is not made")
		return
	}
	q, err := k.queues(b.namespace, lq, spec.Nodes)
	if err != nil {
		b.note(fmt.Sprintf("Kueue admitted the TrainJobs through LocalQueue %s: %v; spec.queues is not made, write it (docs/scenarios.md)", lq, err))
		return
	}
	for _, w := range writes {
		name := trainJobLabel([]*write{w}, priorityClassLabel)
		if name == "" || slices.ContainsFunc(q.PriorityClasses, func(p v1alpha1.PriorityClass) bool { return p.Name == name }) {
			continue
		}
		wpc, ok := k["workloadpriorityclasses"][name]
		if !ok {
			b.note(fmt.Sprintf("WorkloadPriorityClass %s, which a TrainJob names, is not in the log: add it to spec.queues.priorityClasses", name))
			continue
		}
		value, _ := wpc["value"].(float64)
		q.PriorityClasses = append(q.PriorityClasses, v1alpha1.PriorityClass{Name: name, Value: int32(value)})
	}
	reinvocation := "Never, Kueue's manifest's: the log shows no second round of it"
	if kueueReinvoked(writes) {
		q.KueueWebhookReinvocation = "IfNeeded"
		reinvocation = "IfNeeded: the log shows it called again in a second round"
	}
	spec.Queues = q
	b.note("Kueue ran as a component (its writes to the TrainJobs are left out, and replay runs it): spec.queues is made from the log's LocalQueue " + lq + ", its ClusterQueue and their ResourceFlavors; its webhook's reinvocation policy is " + reinvocation)
}

// queues is the spec.queues of LocalQueue lq in namespace ns: its
// ClusterQueue's flavors, preemption policy, and the namespace's other
// LocalQueues as teams.
func (k kueueObjects) queues(ns, lq string, nodes []v1alpha1.NodeGroup) (*v1alpha1.Queues, error) {
	clusterQueueOf := func(name string) (string, error) {
		obj, ok := k["localqueues"][name]
		if !ok {
			return "", fmt.Errorf("the log has no write of LocalQueue %s", name)
		}
		cq, _ := nested(obj, "spec", "clusterQueue").(string)
		return cq, nil
	}
	cq, err := clusterQueueOf(lq)
	if err != nil {
		return nil, err
	}
	flavors, preemption, err := k.clusterQueue(ns, cq, nodes)
	if err != nil {
		return nil, err
	}
	q := &v1alpha1.Queues{LocalQueue: lq, Flavors: flavors}
	if preemption != "Never" {
		q.Preemption = preemption
	}
	for _, team := range sortedKeys(k["localqueues"]) {
		if team == lq {
			continue
		}
		tcq, err := clusterQueueOf(team)
		if err != nil {
			return nil, err
		}
		tf, _, err := k.clusterQueue(ns, tcq, nodes)
		if err != nil {
			return nil, err
		}
		q.Teams = append(q.Teams, v1alpha1.QueueTeam{LocalQueue: team, Flavors: tf})
	}
	return q, nil
}

// clusterQueue is ClusterQueue cq's flavors, in the order Kueue tries
// them, and its withinClusterQueue preemption policy.
func (k kueueObjects) clusterQueue(ns, cq string, nodes []v1alpha1.NodeGroup) ([]v1alpha1.QueueFlavor, string, error) {
	obj, ok := k["clusterqueues"][cq]
	if !ok {
		return nil, "", fmt.Errorf("the log has no write of ClusterQueue %s", cq)
	}
	preemption, _ := nested(obj, "spec", "preemption", "withinClusterQueue").(string)
	groups, _ := nested(obj, "spec", "resourceGroups").([]any)
	var out []v1alpha1.QueueFlavor
	for _, g := range groups {
		flavors, _ := nested(g, "flavors").([]any)
		for _, f := range flavors {
			name, _ := nested(f, "name").(string)
			rf, ok := k["resourceflavors"][name]
			if !ok {
				return nil, "", fmt.Errorf("the log has no write of ResourceFlavor %s", name)
			}
			flavor, err := queueFlavor(strings.TrimPrefix(name, ns+"-"), rf, nodes)
			if err != nil {
				return nil, "", err
			}
			resources, _ := nested(f, "resources").([]any)
			for _, r := range resources {
				quota := fmt.Sprint(nested(r, "nominalQuota"))
				switch nested(r, "name") {
				case "nvidia.com/gpu":
					flavor.GPU = quota
				case "cpu":
					flavor.CPU = quota
				case "memory":
					flavor.Memory = quota
				}
			}
			out = append(out, flavor)
		}
	}
	return out, preemption, nil
}

// queueFlavor is ResourceFlavor rf as a flavor named name: the node
// profile whose nodes its one node label selects, the scenario's nodes'
// first.
func queueFlavor(name string, rf map[string]any, nodes []v1alpha1.NodeGroup) (v1alpha1.QueueFlavor, error) {
	labels, _ := nested(rf, "spec", "nodeLabels").(map[string]any)
	if len(labels) != 1 {
		return v1alpha1.QueueFlavor{}, fmt.Errorf("ResourceFlavor %s selects nodes by %d labels, and a flavor of spec.queues by one", name, len(labels))
	}
	var key, value string
	for k, v := range labels {
		key, value = k, fmt.Sprint(v)
	}
	var candidates []fakegpu.Profile
	for _, g := range nodes {
		if p, err := fakegpu.LookupProfile(g.Profile); err == nil {
			candidates = append(candidates, p)
		}
	}
	candidates = append(candidates, fakegpu.Profiles()...)
	for _, p := range candidates {
		if p.Labels[key] != value && !(key == fakegpu.ProfileLabel && value == p.Name) {
			continue
		}
		f := v1alpha1.QueueFlavor{Name: name, Profile: p.Name}
		if name == p.Name {
			f.Name = ""
		}
		byDefault := fakegpu.ProfileLabel
		if _, ok := p.Labels[fakegpu.GPUProductLabel]; ok {
			byDefault = fakegpu.GPUProductLabel
		}
		if key != byDefault {
			f.NodeLabel = key
		}
		return f, nil
	}
	return v1alpha1.QueueFlavor{}, fmt.Errorf("ResourceFlavor %s selects nodes by %s=%s, which no node profile has (simctl profiles)", name, key, value)
}

// nested is the value at path in v's maps, nil when absent.
func nested(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// created is a JobSet or a Job the log shows created in the namespace.
type created struct {
	resource, name string
	at             time.Time
}

// createdObject returns ev as a successful create of a JobSet (the
// Trainer's server-side apply that made it) or a Job of namespace: the
// components' writes, at level Metadata, their names and times only.
func createdObject(ev *event, namespace string) (created, bool) {
	ref := ev.ObjectRef
	if ref == nil || ref.Namespace != namespace || ref.Subresource != "" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 || ref.Name == "" {
		return created{}, false
	}
	if (ref.Resource == "jobsets" && ref.APIGroup == "jobset.x-k8s.io") || (ref.Resource == "jobs" && ref.APIGroup == "batch") {
		return created{resource: ref.Resource, name: ref.Name, at: ev.Completed}, true
	}
	return created{}, false
}

// admission is Kueue's first admission of a TrainJob (admits), at when
// the API server stored it: a request held (by a gate of the recorded
// scenario, a slow webhook) was received before what it came after.
// gated: it came, in the log, after the TrainJob's JobSet and its jobs
// were made (admitAfter holds it until then on replay).
type admission struct {
	trainJob string
	jobs     []string
	at       time.Time
	gated    bool
	w        *write
}

// kueueAdmissions keeps the order the log shows between the Trainer's and
// JobSet's making of a queued TrainJob's JobSet and Jobs, suspended, and
// Kueue's admission of it: admitted before the Jobs exist, the Jobs are
// made from the template as Kueue's admission left it, after, JobSet adds
// the template's new fields to the existing Jobs and removes none
// (real-kueue/sdk-tolerations-and-kueues): which one the Pods get
// depends on that order. Only each TrainJob's first admission is held (a
// gate is shut from the scenario's start, and would hold the first
// admission until a later one's step). It returns each TrainJob's first
// admission, in the log's order, gated when it came after the JobSet and
// its jobs; every one of them orders the next manager's write
// (admittedBefore).
func (b *builder) kueueAdmissions(writes []*write) []admission {
	var out []admission
	for _, name := range b.trainJobs {
		i := slices.IndexFunc(writes, func(w *write) bool {
			user, _ := w.ev.user()
			return w.kind == trainJobKind && w.name == name && !w.status && identity.Who(user) == identity.Kueue &&
				(w.ev.Verb == "update" || w.ev.Verb == "patch") && w.ev.ResponseStatus != nil && w.ev.ResponseStatus.Code < 300 &&
				admits(requestObject(w))
		})
		if i < 0 {
			continue
		}
		a := admission{trainJob: name, at: writes[i].ev.Completed, w: writes[i]}
		jobSet := false
		for _, c := range b.created {
			if !c.at.Before(a.at) {
				continue
			}
			switch {
			case c.resource == "jobsets" && c.name == name:
				jobSet = true
			case c.resource == "jobs" && strings.HasPrefix(c.name, name+"-"):
				a.jobs = append(a.jobs, c.name)
			}
		}
		a.gated = jobSet && len(a.jobs) > 0
		out = append(out, a)
	}
	slices.SortStableFunc(out, func(x, y admission) int { return x.at.Compare(y.at) })
	return out
}

// admits reports whether a write of Kueue's to a TrainJob (its request's
// body) admits it: it fills Kueue's runtimePatches entry with the
// flavor's node selector and tolerations, or resumes the TrainJob. Kueue
// v0.19 does both in two writes, the entry's update (the job still
// suspended) and then a patch that resumes it; the first is the one the
// Pod template depends on.
func admits(body map[string]any) bool {
	if nested(body, "spec", "suspend") == false {
		return true
	}
	entries, _ := nested(body, "spec", "runtimePatches").([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if manager, _ := m["manager"].(string); kueueManager(manager) && !empty(m["trainingRuntimeSpec"]) {
			return true
		}
	}
	return false
}

// admitAfter adds the step that expects a's JobSet and Jobs, and the gate
// that holds Kueue's admission until it: every update of Kueue's to the
// TrainJob, as the entry's update and the resume are two (admits). The
// step expects too the TrainJob's status as the admission's answer has it,
// its conditions and the jobs its jobsStatus names (not their counts):
// that the Trainer had reported the JobSet's jobs by then, which a later
// wait before a manager's write may ask for as Kueue's write left it. Admitted on replay
// before the Trainer had copied the JobSet's report, the Trainer went
// from "Suspended, no jobs" straight to "Resumed, 1 active", and such a
// wait never held (real-kueue-user-write-between-requests' import, CI's
// round trip). Kueue held, the Trainer gets there on its own.
func (b *builder) admitAfter(a admission) {
	spec := &b.res.Scenario.Spec
	b.n++
	step := v1alpha1.Step{
		Name:   fmt.Sprintf("%d: TrainJob %s's JobSet and %d Job(s) are made before Kueue admits it", b.n, a.trainJob, len(a.jobs)),
		Expect: &v1alpha1.Expect{Objects: []v1alpha1.ObjectExpectation{{Target: v1alpha1.Target{APIVersion: jobSetAPIVersion, Kind: "JobSet", Name: a.trainJob}, Match: v1alpha1.Object{"metadata": map[string]any{"name": a.trainJob}}}}},
	}
	for _, j := range a.jobs {
		step.Expect.Objects = append(step.Expect.Objects, v1alpha1.ObjectExpectation{Target: v1alpha1.Target{APIVersion: "batch/v1", Kind: "Job", Name: j}, Match: v1alpha1.Object{"metadata": map[string]any{"name": j}}})
	}
	if status, ok := statusOf(a.w, []string{"conditions", "jobsStatus"}); ok {
		// The jobs by name, not their counts: how far the JobSet's
		// report had got is the JobSet controller's timing, and the
		// Trainer may copy a later one in one write.
		if jobs, ok := status["jobsStatus"].([]any); ok {
			var names []any
			for _, j := range jobs {
				if m, ok := j.(map[string]any); ok && m["name"] != nil {
					names = append(names, map[string]any{"name": m["name"]})
				}
			}
			status["jobsStatus"] = names
		}
		step.Expect.Objects = append(step.Expect.Objects, v1alpha1.ObjectExpectation{Target: v1alpha1.Target{Kind: trainJobKind, Name: a.trainJob}, Match: v1alpha1.Object{"status": status},
			Reached: true, ReachedSince: b.sinceStep(a.trainJob, func(o *write) bool { return before(o, a.w) })})
	}
	spec.Steps = append(spec.Steps, step)
	spec.Gates = append(spec.Gates, v1alpha1.Gate{
		Name:       fmt.Sprintf("kueue-until-step-%d", b.n),
		Component:  identity.Kueue,
		Verb:       "update",
		Resource:   "trainjobs",
		ObjectName: a.trainJob,
		Until:      step.Name,
	})
}

// stop is Kueue's preemption of a running TrainJob, as the log shows it:
// an update that suspends it (Kueue's Stop), the Trainer's reconcile of
// the suspend (its status write that reports the TrainJob Suspended), then
// the write that clears Kueue's entry (Stop's second, once the TrainJob's
// jobsStatus shows no Job active), at when the API server stored it.
type stop struct {
	trainJob string
	verb     string // the clear's
	// spec is the entry's trainingRuntimeSpec.template.spec the clear
	// left ({}), before is its replicatedJobs before.
	spec, before any
	at           time.Time
}

// kueueStops keeps the order the log shows between Kueue's two writes of a
// preemption and the Trainer's reconcile between them, in which it read
// the suspend with Kueue's entry still in place and suspended the JobSet.
// A Trainer whose first read after the suspend has the entry cleared
// applies the suspend with an emptied entry, which the JobSet CRD refuses,
// and the JobSet keeps running (real-kueue/preempted-before-reported-active
// says why no gate can force that order, views/preemption-seen-as-one-change
// forces it with a view); which one a replay takes depends on how far the
// Trainer's informer has got, and a shaken replay of
// real-kueue-readmission-to-another-flavor's import took the other (CI's
// round trip). It returns the stops, in the log's order, whose clear came
// after the Trainer reported the suspended TrainJob Suspended
// (suspendedBefore holds the clear on replay until the Trainer has
// suspended the JobSet).
func (b *builder) kueueStops(writes []*write) []stop {
	var out []stop
	for i, w := range writes {
		if w.kind != trainJobKind || w.status || !b.byKueue(w) || !suspends(w, writes) {
			continue
		}
		reconciled := false
		for _, o := range writes[i+1:] {
			if o.kind != trainJobKind || o.name != w.name {
				continue
			}
			user, _ := o.ev.user()
			if o.status && identity.Who(user) == identity.Trainer && o.ev.ResponseStatus != nil && o.ev.ResponseStatus.Code < 300 &&
				hasCondition(requestObject(o), "Suspended", "True", "Suspended") {
				reconciled = true
			}
			if !o.status && b.byKueue(o) && o.rv != "" && clears(priorObject(o, writes), responseObject(o)) {
				if reconciled {
					out = append(out, stop{trainJob: w.name, verb: o.ev.Verb, at: o.ev.Completed,
						spec: kueueTemplateSpec(responseObject(o)), before: kueueReplicatedJobs(priorObject(o, writes))})
				}
				break
			}
		}
	}
	slices.SortStableFunc(out, func(x, y stop) int { return x.at.Compare(y.at) })
	return out
}

// byKueue reports whether w is Kueue's, as a component.
func (b *builder) byKueue(w *write) bool {
	user, _ := w.ev.user()
	return identity.Who(user) == identity.Kueue
}

// clears reports whether a TrainJob going from prior to after had Kueue's
// entry's replicated jobs emptied (Kueue's RestorePodSetsInfo).
func clears(prior, after map[string]any) bool {
	return prior != nil && after != nil && !empty(kueueReplicatedJobs(prior)) && empty(kueueReplicatedJobs(after))
}

// kueueReplicatedJobs is Kueue's entry's replicatedJobs in a TrainJob, nil
// without them.
func kueueReplicatedJobs(obj map[string]any) any {
	return nested(kueueTemplateSpec(obj), "replicatedJobs")
}

// kueueTemplateSpec is Kueue's entry's trainingRuntimeSpec.template.spec
// in a TrainJob, nil without it.
func kueueTemplateSpec(obj map[string]any) any {
	entries, _ := nested(obj, "spec", "runtimePatches").([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			if manager, _ := m["manager"].(string); kueueManager(manager) {
				return nested(m, "trainingRuntimeSpec", "template", "spec")
			}
		}
	}
	return nil
}

// clearChange is the change of s's clear: its entry's template.spec to
// what the clear left (an emptied spec, {}), or, when the log does not
// have it, the entry's replicatedJobs from what they were before.
func clearChange(s stop) *v1alpha1.GateChange {
	const entry = "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec"
	if s.spec != nil {
		return &v1alpha1.GateChange{Field: entry, To: s.spec}
	}
	return &v1alpha1.GateChange{Field: entry + ".replicatedJobs", From: s.before}
}

// suspendedBefore adds the step that expects s's TrainJob suspended and
// its JobSet suspended by the Trainer, and the gate that holds Kueue's
// clear of its entry until it: the Trainer reads the suspend with the
// entry in place, as in the log.
func (b *builder) suspendedBefore(s stop) {
	spec := &b.res.Scenario.Spec
	b.n++
	step := v1alpha1.Step{
		Name: fmt.Sprintf("%d: Kueue suspends TrainJob %s and the Trainer suspends its JobSet before Kueue clears its entry", b.n, s.trainJob),
		Expect: &v1alpha1.Expect{Objects: []v1alpha1.ObjectExpectation{
			{Target: v1alpha1.Target{Kind: trainJobKind, Name: s.trainJob}, Match: v1alpha1.Object{"spec": map[string]any{"suspend": true}}},
			{Target: v1alpha1.Target{APIVersion: jobSetAPIVersion, Kind: "JobSet", Name: s.trainJob}, Match: v1alpha1.Object{"spec": map[string]any{"suspend": true}}},
		}},
	}
	spec.Steps = append(spec.Steps, step)
	spec.Gates = append(spec.Gates, v1alpha1.Gate{
		Name:       fmt.Sprintf("kueue-clears-until-step-%d", b.n),
		Component:  identity.Kueue,
		Verb:       s.verb,
		Resource:   "trainjobs",
		ObjectName: s.trainJob,
		Change:     clearChange(s),
		Until:      step.Name,
	})
}
