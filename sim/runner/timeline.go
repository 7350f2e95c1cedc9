package runner

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
)

// Lanes of the controllers whose reactions the timeline records, in
// display order after the actors.
const (
	// LaneTrainer is the Kubeflow Trainer: the JobSet it applies, the
	// TrainJob's status conditions, PodGroups.
	LaneTrainer = "trainer"
	// LaneJobSet is the JobSet controller: the Jobs it creates, deletes,
	// suspends and resumes.
	LaneJobSet = "jobset"
	// LaneJobController is kube-controller-manager's Job controller: the
	// Pods it creates and deletes, a Job's Complete and Failed conditions.
	LaneJobController = "job-controller"
	// LaneScheduler is kube-scheduler: Pods bound, Pods not scheduled.
	LaneScheduler = "scheduler"
	// LaneKWOK is the fake kubelet: the phases Pods reach.
	LaneKWOK = "kwok"
	// LaneKueue is the Kueue component: its writes to TrainJobs (from
	// managedFields: its field manager is cluster.KueueManager) and its events.
	LaneKueue = cluster.KueueManager
	// LaneAdmin is the lane of writes of steps without an actor.
	LaneAdmin = "admin"
)

// controllerLanes are the controller lanes in display order.
var controllerLanes = []string{LaneTrainer, LaneJobSet, LaneJobController, LaneScheduler, LaneKWOK}

// eventLanes puts the events of a known reporting component on its
// controller's lane; other components get a lane of their own.
var eventLanes = map[string]string{
	"default-scheduler": LaneScheduler,
	"job-controller":    LaneJobController,
	"jobset":            LaneJobSet,
	"pod":               LaneJobSet, // the JobSet manager's Pod reconciler
	// Kueue's TrainJob reconciler and its scheduler's admission.
	"trainer.kubeflow.org/trainjob-kueue-controller": LaneKueue,
	"kueue-admission": LaneKueue,
}

// MaxTimelineReactions caps the reactions recorded for one scenario;
// beyond it they are counted in Timeline.Dropped.
const MaxTimelineReactions = 2000

// Bounds of the watches' start and stop: neither may hold a scenario up
// for long.
const (
	watchSyncTimeout = 10 * time.Second
	watchStopTimeout = 5 * time.Second
)

// maxChangeLines bounds the changes listed in a JobSet entry's detail.
const maxChangeLines = 20

// setUpStep is the step name of entries before the first step.
const setUpStep = "set-up"

// watched are the resources the timeline watches in a scenario's
// namespace, by the kind of their objects.
var watched = map[string]schema.GroupVersionResource{
	"TrainJob": {Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"},
	"JobSet":   {Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"},
	"Job":      {Group: "batch", Version: "v1", Resource: "jobs"},
	"Pod":      {Version: "v1", Resource: "pods"},
	"Event":    {Version: "v1", Resource: "events"},
	"PodGroup": {Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"},
}

// reactions derives the timeline entries of one observed change of an
// object of the given kind (old nil: created; obj nil: deleted). At and
// Step are left to the caller.
func reactions(kind string, old, obj *unstructured.Unstructured) []results.TimelineEntry {
	switch kind {
	case "TrainJob":
		return trainJobReactions(old, obj)
	case "JobSet":
		return jobSetReactions(old, obj)
	case "Job":
		var o, n *batchv1.Job
		if !typed(old, &o) || !typed(obj, &n) {
			return nil
		}
		return jobReactions(o, n)
	case "Pod":
		var o, n *corev1.Pod
		if !typed(old, &o) || !typed(obj, &n) {
			return nil
		}
		return podReactions(o, n)
	case "Event":
		var n *corev1.Event
		if old != nil || !typed(obj, &n) {
			return nil // only new events: an update counts a repetition
		}
		return eventReactions(n)
	case "PodGroup":
		return podGroupReactions(old, obj)
	}
	return nil
}

// typed converts u into *out, leaving *out nil for a nil u; false when the
// conversion fails.
func typed[T any](u *unstructured.Unstructured, out **T) bool {
	if u == nil {
		return true
	}
	*out = new(T)
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, *out) == nil
}

func trainJobReactions(old, obj *unstructured.Unstructured) []results.TimelineEntry {
	if obj == nil {
		return nil // the writes say who deleted it
	}
	out := managerWrites(old, obj)
	before := map[string]map[string]any{}
	if old != nil {
		for _, c := range conditions(old) {
			t, _ := c["type"].(string)
			before[t] = c
		}
	}
	for _, c := range conditions(obj) {
		t, _ := c["type"].(string)
		status, _ := c["status"].(string)
		reason, _ := c["reason"].(string)
		message, _ := c["message"].(string)
		if b, ok := before[t]; ok && b["status"] == status && b["reason"] == reason {
			continue
		}
		out = append(out, results.TimelineEntry{
			Lane:    LaneTrainer,
			Kind:    results.EntryTrainJobCondition,
			Object:  "TrainJob/" + obj.GetName(),
			Summary: fmt.Sprintf("TrainJob %s: condition %s=%s (%s)", obj.GetName(), t, status, reason),
			Detail:  message,
		})
	}
	return out
}

// managerWrites attributes a change of a TrainJob's spec or metadata to
// the field managers whose managedFields entry (outside the status
// subresource) the change made new or changed, its fields or its time: what
// the server recorded of who wrote, not a guess. Writes of the scenario's
// own actors are dropped by buildTimeline, which has their own entries. A
// write that changes neither a manager's fields nor its time (which has
// second precision) is not seen.
func managerWrites(old, obj *unstructured.Unstructured) []results.TimelineEntry {
	if old != nil && old.GetGeneration() == obj.GetGeneration() && equality.Semantic.DeepEqual(old.GetLabels(), obj.GetLabels()) && equality.Semantic.DeepEqual(old.GetAnnotations(), obj.GetAnnotations()) {
		return nil
	}
	before := managedFieldsOf(old)
	var out []results.TimelineEntry
	for _, m := range obj.GetManagedFields() {
		if m.Subresource != "" {
			continue
		}
		b, ok := before[managedFieldsKey(m)]
		if ok && b.Time.Equal(m.Time) && equality.Semantic.DeepEqual(b.FieldsV1, m.FieldsV1) {
			continue
		}
		e := results.TimelineEntry{
			Lane:    m.Manager,
			Kind:    results.EntryManagerWrite,
			Object:  "TrainJob/" + obj.GetName(),
			Summary: fmt.Sprintf("TrainJob %s: %s by %s (from managedFields)", obj.GetName(), strings.ToLower(string(m.Operation)), m.Manager),
		}
		if old != nil {
			e.Detail = specChanges(old, obj)
		}
		out = append(out, e)
	}
	return out
}

// managedFieldsOf returns u's managedFields entries by managedFieldsKey;
// none for a nil u.
func managedFieldsOf(u *unstructured.Unstructured) map[string]metav1.ManagedFieldsEntry {
	out := map[string]metav1.ManagedFieldsEntry{}
	if u != nil {
		for _, m := range u.GetManagedFields() {
			out[managedFieldsKey(m)] = m
		}
	}
	return out
}

// managedFieldsKey is what tells one managedFields entry from another: its
// manager, operation and subresource.
func managedFieldsKey(m metav1.ManagedFieldsEntry) string {
	return m.Manager + "/" + string(m.Operation) + "/" + m.Subresource
}

func conditions(u *unstructured.Unstructured) []map[string]any {
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []map[string]any
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func jobSetReactions(old, obj *unstructured.Unstructured) []results.TimelineEntry {
	e := results.TimelineEntry{Lane: LaneTrainer}
	switch {
	case obj == nil:
		e.Kind, e.Object = results.EntryJobSetDeleted, "JobSet/"+old.GetName()
		e.Summary = fmt.Sprintf("JobSet %s deleted", old.GetName())
		return []results.TimelineEntry{e}
	case old == nil:
		suspend, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend")
		e.Lane, e.Kind, e.Object = specWriter(nil, obj), results.EntryJobSetCreated, "JobSet/"+obj.GetName()
		e.Summary = fmt.Sprintf("JobSet %s created (suspend: %t)", obj.GetName(), suspend)
		var jobs []string
		list, _, _ := unstructured.NestedSlice(obj.Object, "spec", "replicatedJobs")
		for _, rj := range list {
			m, _ := rj.(map[string]any)
			replicas, ok, _ := unstructured.NestedInt64(m, "replicas")
			if !ok {
				replicas = 1
			}
			jobs = append(jobs, fmt.Sprintf("%v x%d", m["name"], replicas))
		}
		e.Detail = "replicatedJobs: " + strings.Join(jobs, ", ")
		return []results.TimelineEntry{e}
	}
	e.Object = "JobSet/" + obj.GetName()
	was, _, _ := unstructured.NestedBool(old.Object, "spec", "suspend")
	is, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend")
	switch {
	case was != is && is:
		e.Kind, e.Summary = results.EntryJobSetSuspended, fmt.Sprintf("JobSet %s suspended", obj.GetName())
	case was != is:
		e.Kind, e.Summary = results.EntryJobSetResumed, fmt.Sprintf("JobSet %s resumed", obj.GetName())
	case obj.GetGeneration() != old.GetGeneration():
		e.Kind, e.Summary = results.EntryJobSetChanged, fmt.Sprintf("JobSet %s spec changed (generation %d)", obj.GetName(), obj.GetGeneration())
	default:
		return nil
	}
	e.Lane, e.Detail = specWriter(old, obj), specChanges(old, obj)
	return []results.TimelineEntry{e}
}

// specWriter names, from obj's managedFields, who made a JobSet's spec
// what it is (old nil: who created it): the manager whose entry the change
// made new or changed (its fields or its time), else, when the change left
// every entry as it was (the same fields, within the same second), the
// owners of spec.suspend, the field the timeline's JobSet entries are
// mostly about. The Trainer applies JobSets as field manager "trainer",
// its lane's name; Kueue, a webhook or an actor that writes the JobSet
// gets a lane of its own. LaneTrainer when managedFields say nothing.
func specWriter(old, obj *unstructured.Unstructured) string {
	before := managedFieldsOf(old)
	var changed, suspend []string
	for _, m := range obj.GetManagedFields() {
		if m.Subresource != "" || m.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(m.FieldsV1.Raw, &fields) == nil {
			if _, ok, _ := unstructured.NestedFieldNoCopy(fields, "f:spec", "f:suspend"); ok {
				suspend = append(suspend, m.Manager)
			}
		}
		b, ok := before[managedFieldsKey(m)]
		if !ok || !b.Time.Equal(m.Time) || !equality.Semantic.DeepEqual(b.FieldsV1, m.FieldsV1) {
			changed = append(changed, m.Manager)
		}
	}
	switch {
	case len(changed) > 0:
		return strings.Join(changed, ",")
	case len(suspend) > 0:
		return strings.Join(suspend, ",")
	}
	return LaneTrainer
}

// specChanges lists what changed between two specs, one line per field,
// at most maxChangeLines.
func specChanges(old, obj *unstructured.Unstructured) string {
	before, _, _ := unstructured.NestedMap(old.Object, "spec")
	after, _, _ := unstructured.NestedMap(obj.Object, "spec")
	d := &differ{whole: true}
	d.compare("spec", "spec", normalize(before), normalize(after), true, false)
	var lines []string
	for i, c := range d.out {
		if i == maxChangeLines {
			lines = append(lines, fmt.Sprintf("... and %d more", len(d.out)-i))
			break
		}
		lines = append(lines, fmt.Sprintf("%s: %s → %s", c.Path, orAbsent(c.Sent), orAbsent(c.Stored)))
	}
	return strings.Join(lines, "\n")
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

func jobReactions(old, job *batchv1.Job) []results.TimelineEntry {
	suspended := func(j *batchv1.Job) bool { return j.Spec.Suspend != nil && *j.Spec.Suspend }
	switch {
	case job == nil:
		return []results.TimelineEntry{{Lane: LaneJobSet, Kind: results.EntryJobDeleted, Object: "Job/" + old.Name, Summary: fmt.Sprintf("Job %s deleted", old.Name)}}
	case old == nil:
		return []results.TimelineEntry{{Lane: LaneJobSet, Kind: results.EntryJobCreated, Object: "Job/" + job.Name,
			Summary: fmt.Sprintf("Job %s created (suspend: %t)", job.Name, suspended(job)),
			Detail:  fmt.Sprintf("parallelism %d, completions %d", deref(job.Spec.Parallelism), deref(job.Spec.Completions))}}
	}
	var out []results.TimelineEntry
	if suspended(old) != suspended(job) {
		e := results.TimelineEntry{Lane: LaneJobSet, Kind: results.EntryJobResumed, Object: "Job/" + job.Name, Summary: fmt.Sprintf("Job %s resumed", job.Name)}
		if suspended(job) {
			e.Kind, e.Summary = results.EntryJobSuspended, fmt.Sprintf("Job %s suspended", job.Name)
		}
		out = append(out, e)
	}
	for _, c := range job.Status.Conditions {
		if c.Type != batchv1.JobComplete && c.Type != batchv1.JobFailed || c.Status != corev1.ConditionTrue || hasJobCondition(old, c.Type) {
			continue
		}
		out = append(out, results.TimelineEntry{Lane: LaneJobController, Kind: results.EntryJobCondition, Object: "Job/" + job.Name,
			Summary: fmt.Sprintf("Job %s %s (%s)", job.Name, c.Type, c.Reason), Detail: c.Message})
	}
	return out
}

func hasJobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func podReactions(old, pod *corev1.Pod) []results.TimelineEntry {
	if pod == nil {
		return []results.TimelineEntry{{Lane: LaneJobController, Kind: results.EntryPodDeleted, Object: "Pod/" + old.Name, Summary: fmt.Sprintf("Pod %s deleted", old.Name)}}
	}
	object := "Pod/" + pod.Name
	var out []results.TimelineEntry
	if old == nil {
		e := results.TimelineEntry{Lane: LaneJobController, Kind: results.EntryPodCreated, Object: object, Summary: fmt.Sprintf("Pod %s created", pod.Name)}
		if owner := metaOwner(pod.OwnerReferences); owner != "" {
			e.Detail = "owner: " + owner
		}
		out = append(out, e)
		old = &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	if old.Spec.NodeName == "" && pod.Spec.NodeName != "" {
		out = append(out, results.TimelineEntry{Lane: LaneScheduler, Kind: results.EntryPodBound, Object: object,
			Summary: fmt.Sprintf("Pod %s bound to node %s", pod.Name, pod.Spec.NodeName)})
	}
	if c := podScheduled(pod); c != nil && c.Status == corev1.ConditionFalse {
		if o := podScheduled(old); o == nil || o.Status != corev1.ConditionFalse || o.Reason != c.Reason {
			out = append(out, results.TimelineEntry{Lane: LaneScheduler, Kind: results.EntryPodUnschedulable, Object: object,
				Summary: fmt.Sprintf("Pod %s not scheduled: %s", pod.Name, c.Reason), Detail: c.Message})
		}
	}
	if pod.Status.Phase != old.Status.Phase && pod.Status.Phase != "" {
		out = append(out, results.TimelineEntry{Lane: LaneKWOK, Kind: results.EntryPodPhase, Object: object,
			Summary: fmt.Sprintf("Pod %s %s", pod.Name, pod.Status.Phase)})
	}
	return out
}

func podScheduled(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func metaOwner(refs []metav1.OwnerReference) string {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return r.Kind + "/" + r.Name
		}
	}
	return ""
}

func eventReactions(ev *corev1.Event) []results.TimelineEntry {
	source := ev.ReportingController
	if source == "" {
		source = ev.Source.Component
	}
	if source == "" {
		source = "events"
	}
	lane, ok := eventLanes[source]
	switch {
	case ok:
	case strings.HasPrefix(source, "trainer-"):
		lane = LaneTrainer
	default:
		lane = source
	}
	kind := results.EntryEvent
	if ev.Type == corev1.EventTypeWarning {
		kind = results.EntryWarningEvent
	}
	object := ev.InvolvedObject.Kind + "/" + ev.InvolvedObject.Name
	return []results.TimelineEntry{{
		Lane:    lane,
		Kind:    kind,
		Object:  object,
		Summary: fmt.Sprintf("event %s on %s: %s", ev.Reason, object, results.FirstLine(ev.Message)),
		Detail:  fmt.Sprintf("%s event from %s\n%s", ev.Type, source, ev.Message),
	}}
}

func podGroupReactions(old, obj *unstructured.Unstructured) []results.TimelineEntry {
	if obj == nil {
		return nil
	}
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	if old == nil {
		return []results.TimelineEntry{{Lane: LaneTrainer, Kind: results.EntryPodGroupCreated, Object: "PodGroup/" + obj.GetName(), Summary: fmt.Sprintf("PodGroup %s created", obj.GetName())}}
	}
	if was, _, _ := unstructured.NestedString(old.Object, "status", "phase"); was == phase || phase == "" {
		return nil
	}
	return []results.TimelineEntry{{Lane: LaneScheduler, Kind: results.EntryPodGroupPhase, Object: "PodGroup/" + obj.GetName(), Summary: fmt.Sprintf("PodGroup %s %s", obj.GetName(), phase)}}
}

// buildTimeline puts the scenario's writes and the observed reactions on
// one timeline, in the order of their times, and orders the lanes.
func buildTimeline(sc *v1alpha1.Scenario, setup []results.Write, steps []results.Step, observed []results.TimelineEntry, dropped int, problems []string) *results.Timeline {
	tl := &results.Timeline{Entries: []results.TimelineEntry{}, Truncated: dropped > 0, Dropped: dropped, Problems: problems}
	for k := range setup {
		tl.Entries = append(tl.Entries, writeEntry(&setup[k], setUpStep, &results.WriteRef{Index: k, Setup: true}))
	}
	for i := range steps {
		for k := range steps[i].Writes {
			tl.Entries = append(tl.Entries, writeEntry(&steps[i].Writes[k], steps[i].Name, &results.WriteRef{Step: i, Index: k}))
		}
	}
	scripted := map[string]bool{AdminFieldManager: true}
	for _, a := range sc.Spec.Actors {
		scripted[a.FieldManager] = true
	}
	for _, e := range observed {
		if e.Kind == results.EntryManagerWrite && scripted[e.Lane] {
			continue // the scenario's own write, which has its entry
		}
		tl.Entries = append(tl.Entries, e)
	}
	slices.SortStableFunc(tl.Entries, func(a, b results.TimelineEntry) int { return a.At.Compare(b.At) })

	seen := map[string]bool{}
	lane := func(name string) {
		if !seen[name] {
			seen[name] = true
			tl.Lanes = append(tl.Lanes, name)
		}
	}
	for _, a := range sc.Spec.Actors {
		lane(a.Name)
	}
	for _, e := range tl.Entries {
		if e.Kind == results.EntryWrite {
			lane(e.Lane)
		}
	}
	for _, l := range controllerLanes {
		lane(l)
	}
	for _, e := range tl.Entries {
		lane(e.Lane)
	}
	return tl
}

// writeEntry is the timeline entry of the write w of the named step, which
// ref locates in the scenario.
func writeEntry(w *results.Write, step string, ref *results.WriteRef) results.TimelineEntry {
	verb := w.Verb
	if w.PatchType != "" && w.PatchType != w.Verb {
		verb += " (" + w.PatchType + ")"
	}
	status := "no response"
	if w.Status != 0 {
		status = fmt.Sprintf("%d %s", w.Status, http.StatusText(w.Status))
	}
	lines := []string{
		"field manager: " + w.FieldManager,
		fmt.Sprintf("resourceVersion: %s → %s", orAbsent(w.ResourceVersionBefore), orAbsent(w.ResourceVersionAfter)),
	}
	switch refused := w.Status == 0 || w.Status >= 400; {
	case refused && w.Expected:
		lines = append(lines, "refused, as expected")
	case refused:
		lines = append(lines, "refused, NOT expected")
	case !w.Expected:
		lines = append(lines, "accepted, but an error was expected")
	}
	if w.Message != "" {
		lines = append(lines, "message: "+w.Message)
	}
	if len(w.ChangedBy) > 0 {
		lines = append(lines, fmt.Sprintf("the object changed since resourceVersion %s: %s", w.ResourceVersionBefore, strings.Join(w.ChangedBy, ", ")))
	}
	for _, warning := range w.Warnings {
		lines = append(lines, "warning: "+warning)
	}
	if len(w.Mutations) > 0 {
		lines = append(lines, "the server changed:")
		for _, m := range w.Mutations {
			lines = append(lines, "  "+mutationLine(m))
		}
	}
	lane := w.Actor
	if lane == "" {
		lane = LaneAdmin
	}
	return results.TimelineEntry{
		At:       w.Started,
		Duration: w.Duration,
		Lane:     lane,
		Kind:     results.EntryWrite,
		Object:   w.Target,
		Summary:  fmt.Sprintf("%s %s: %s", verb, w.Target, status),
		Detail:   strings.Join(lines, "\n"),
		Step:     step,
		Status:   w.Status,
		Write:    ref,
	}
}

// mutationLine renders one FieldChange: "path: added "x"".
func mutationLine(c results.FieldChange) string {
	switch c.Kind {
	case results.FieldAdded:
		return fmt.Sprintf("%s: added %s", c.Path, c.Stored)
	case results.FieldRemoved:
		return fmt.Sprintf("%s: removed (sent %s)", c.Path, c.Sent)
	default:
		return fmt.Sprintf("%s: %s → %s", c.Path, c.Sent, c.Stored)
	}
}
