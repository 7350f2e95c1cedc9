package auditimport

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// The phase of a TrainJob's Pods when a manager wrote: a change refused
// while they run, a suspend whose Pods take their time to go, meets them
// running on replay too. The log has it when the kubelets' writes of Pod
// status are recorded at level Request (RecordPolicy does).

// jobSetNameLabel is the label JobSet puts on its Pods: the JobSet's name,
// which is its TrainJob's; replicatedJobNameLabel names the replicated job.
const (
	jobSetNameLabel        = "jobset.sigs.k8s.io/jobset-name"
	replicatedJobNameLabel = "jobset.sigs.k8s.io/replicatedjob-name"
)

// podEvent is a write to one of the namespace's Pods.
type podEvent struct {
	// name is the Pod's, "" for a create (the Job controller's Pods are
	// named by the server); jobSet the create's label jobSetNameLabel.
	name, jobSet string
	verb         string
	// phase is what a status write set, "" none.
	phase string
	at    time.Time
	// container is the first container's state as a status write
	// reported it, when it did.
	container containerState
	// A create's replicated job (its label replicatedJobNameLabel), the
	// prefix of the names the server gave (metadata.generateName), and
	// what the Pod was created with (createdWith).
	replicatedJob, generateName string
	spec                        map[string]any
}

// containerState is the part of a Pod's first container status a
// lifecycle is made from.
type containerState struct {
	State struct {
		Running *struct {
			StartedAt time.Time `json:"startedAt"`
		} `json:"running"`
		Terminated *terminated `json:"terminated"`
	} `json:"state"`
	LastState struct {
		Terminated *terminated `json:"terminated"`
	} `json:"lastState"`
}

// terminated is a container's end.
type terminated struct {
	ExitCode   int32     `json:"exitCode"`
	Reason     string    `json:"reason"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
}

// podWrite returns ev as a successful write to a Pod of namespace, or to
// its status.
func podWrite(ev *event, namespace string) (podEvent, bool) {
	ref := ev.ObjectRef
	if ref == nil || ref.Resource != "pods" || ref.Namespace != namespace || ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 {
		return podEvent{}, false
	}
	p := podEvent{name: ref.Name, verb: ev.Verb, at: ev.Completed}
	var body struct {
		Metadata struct {
			Labels       map[string]string `json:"labels"`
			GenerateName string            `json:"generateName"`
		} `json:"metadata"`
		Spec   map[string]any `json:"spec"`
		Status struct {
			Phase             string           `json:"phase"`
			ContainerStatuses []containerState `json:"containerStatuses"`
		} `json:"status"`
	}
	_ = json.Unmarshal(ev.RequestObject, &body)
	switch {
	case ref.Subresource == "" && ev.Verb == "create":
		p.jobSet = body.Metadata.Labels[jobSetNameLabel]
		p.replicatedJob = body.Metadata.Labels[replicatedJobNameLabel]
		p.generateName = body.Metadata.GenerateName
		p.spec = body.Spec
	case ref.Subresource == "" && ev.Verb == "delete":
	case ref.Subresource == "status" && (ev.Verb == "patch" || ev.Verb == "update"):
		p.phase = body.Status.Phase
		if len(body.Status.ContainerStatuses) > 0 {
			p.container = body.Status.ContainerStatuses[0]
		}
	default:
		return podEvent{}, false
	}
	return p, true
}

// podsBefore is the expectation that TrainJob w.name's Pods run, when the
// log has all of them Running before w was received: as many as its Job
// controller created, none deleted, each last reported Running. Nil
// otherwise (no Pods yet, some not running, a log without the status
// writes' bodies).
func (b *builder) podsBefore(w *write) *v1alpha1.PodExpectation {
	if w.kind != trainJobKind || w.ev.Verb == "create" {
		return nil
	}
	created := 0
	phases := map[string]string{}
	for _, p := range b.pods {
		if p.at.After(w.ev.Received) {
			continue
		}
		switch {
		case p.verb == "create":
			if p.jobSet == w.name {
				created++
			}
		case !strings.HasPrefix(p.name, w.name+"-"):
		case p.verb == "delete":
			return nil // Pods going: their phase is the kubelet's race
		case p.phase != "":
			phases[p.name] = p.phase
		}
	}
	if created == 0 || len(phases) != created || slices.ContainsFunc(mapValues(phases), func(s string) bool { return s != "Running" }) {
		return nil
	}
	return &v1alpha1.PodExpectation{
		Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{jobSetNameLabel: w.name}},
		Count:    &created,
		Phase:    "Running",
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// lifecycleRound is what a lifecycle's time is cut to: the log's times
// hold the kubelet's own work on top of the scenario's.
const lifecycleRound = 100 * time.Millisecond

// lifecycles are the rules of spec.lifecycle that make the TrainJobs'
// Pods end as they did in the log, one for each TrainJob whose Pods ended
// alike (succeeded, or failed with one exit code and reason: Failed, or
// restarted in place), so long after they started as the first of them
// to end did. The kubelet reports an end when it gets to it: KWOK's
// stage is timed from when it saw the Pod running, and on a loaded
// machine one Pod's end comes 100 ms later than its sibling's (a clean
// clone's make test: two Pods of one rule logged 1.0 s and 1.1 s, and an
// import that took them for two kinds of end made no rule, and its Pods
// ran for ever). The earliest is the closest to the rule, and Pods whose
// ends are further apart are named in a note. A Pod deleted before it
// ended (a suspension's) tells nothing; Pods of one TrainJob that ended
// otherwise are named in a note.
func (b *builder) lifecycles() []v1alpha1.PodLifecycle {
	type outcome struct {
		failed   bool
		exitCode int32
		reason   string
	}
	type end struct {
		outcome
		after time.Duration
	}
	ends := map[string]map[string]end{} // TrainJob, Pod
	deleted := map[string]bool{}
	// started is when a Pod's container last started running, as the
	// kubelet reported it while it ran: to the nanosecond, where the
	// terminated state's start is to the second.
	started := map[string]time.Time{}
	for _, p := range b.pods {
		if p.verb == "delete" {
			deleted[p.name] = true
			continue
		}
		if r := p.container.State.Running; r != nil && !r.StartedAt.IsZero() {
			started[p.name] = r.StartedAt
		}
		var t *terminated
		switch c := p.container; {
		case c.State.Terminated != nil && (p.phase == "Succeeded" || p.phase == "Failed"):
			t = c.State.Terminated
		case c.LastState.Terminated != nil && c.LastState.Terminated.ExitCode != 0:
			t = c.LastState.Terminated // restarted in place
		}
		if t == nil || deleted[p.name] {
			continue
		}
		start := t.StartedAt
		if s, ok := started[p.name]; ok && s.After(start) && !s.After(t.FinishedAt) {
			start = s
		}
		if start.IsZero() {
			continue
		}
		for _, tj := range b.trainJobs {
			if !strings.HasPrefix(p.name, tj+"-") {
				continue
			}
			if ends[tj] == nil {
				ends[tj] = map[string]end{}
			}
			if _, seen := ends[tj][p.name]; !seen {
				ends[tj][p.name] = end{outcome{failed: t.ExitCode != 0, exitCode: t.ExitCode, reason: t.Reason}, t.FinishedAt.Sub(start)}
			}
		}
	}
	var out []v1alpha1.PodLifecycle
	for _, tj := range b.trainJobs {
		pods := ends[tj]
		if len(pods) == 0 {
			continue
		}
		var first outcome
		alike := true
		earliest, latest := time.Duration(-1), time.Duration(0)
		for i, name := range sortedKeys(pods) {
			e := pods[name]
			if i == 0 {
				first = e.outcome
			} else if e.outcome != first {
				alike = false
			}
			if earliest < 0 || e.after < earliest {
				earliest = e.after
			}
			latest = max(latest, e.after)
		}
		if !alike {
			b.note(fmt.Sprintf("TrainJob %s's Pods ended in different ways (exit codes, reasons): spec.lifecycle is not made for them; write one rule a Pod (docs/scenarios.md)", tj))
			continue
		}
		after := earliest.Truncate(lifecycleRound)
		if latest.Truncate(lifecycleRound) != after {
			b.note(fmt.Sprintf("TrainJob %s's Pods ended %s to %s after they started: spec.lifecycle ends them all after %s, the first's; write one rule a Pod if the others' later end matters (docs/scenarios.md)", tj, after, latest.Truncate(lifecycleRound), after))
		}
		rule := v1alpha1.PodLifecycle{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{jobSetNameLabel: tj}}}
		if first.failed {
			rule.Fail = &v1alpha1.PodFailure{After: v1alpha1.Duration{Duration: after}, ExitCode: first.exitCode}
			if first.reason != "" && first.reason != "Error" {
				rule.Fail.Reason = first.reason
			}
		} else {
			rule.SucceedAfter = &v1alpha1.Duration{Duration: after}
		}
		out = append(out, rule)
	}
	return out
}

// podsCreatedWith are the steps that expect, of each TrainJob's replicated
// jobs that still had Pods when the log ends, a Pod created as the log's
// last create of them was: its node selector, tolerations, volumes and
// its containers' env and volume mounts, as the Job controller sent them
// (before admission: what the Trainer and JobSet made of the entries,
// without the ServiceAccount's token volume or the harness's isolation).
// A replicated job whose Pods were all deleted (a suspension, a
// teardown) is expected of nothing: what its Pods were is gone with them.
func (b *builder) podsCreatedWith() []v1alpha1.Step {
	type key struct{ trainJob, replicatedJob string }
	last := map[key]podEvent{}
	created := map[key]int{}
	// prefixes are the names the server gave each key's Pods from
	// (metadata.generateName: one a Job, so several a replicated job of
	// several replicas).
	prefixes := map[string]key{}
	deleted := map[key]map[string]bool{}
	var order []key
	for _, p := range b.pods {
		switch p.verb {
		case "create":
			if p.jobSet == "" || p.replicatedJob == "" || p.generateName == "" || !slices.Contains(b.trainJobs, p.jobSet) {
				continue
			}
			k := key{p.jobSet, p.replicatedJob}
			if _, seen := last[k]; !seen {
				order = append(order, k)
			}
			last[k] = p
			created[k]++
			prefixes[p.generateName] = k
		case "delete":
			// Of the Pod whose name has the longest prefix: a deletion
			// can be written twice (gracefully, then by the kubelet),
			// so Pods are counted by name.
			best := ""
			for prefix := range prefixes {
				if strings.HasPrefix(p.name, prefix) && len(prefix) > len(best) {
					best = prefix
				}
			}
			if best != "" {
				k := prefixes[best]
				if deleted[k] == nil {
					deleted[k] = map[string]bool{}
				}
				deleted[k][p.name] = true
			}
		}
	}
	var steps []v1alpha1.Step
	for _, k := range order {
		if created[k] <= len(deleted[k]) {
			continue
		}
		want := createdWith(last[k].spec)
		if len(want) == 0 {
			continue
		}
		b.n++
		steps = append(steps, v1alpha1.Step{
			Name: fmt.Sprintf("%d: TrainJob %s's %s Pods are created as the log's last were", b.n, k.trainJob, k.replicatedJob),
			Expect: &v1alpha1.Expect{Pods: &v1alpha1.PodExpectation{
				Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{jobSetNameLabel: k.trainJob, replicatedJobNameLabel: k.replicatedJob}},
				Any:      v1alpha1.Object{"spec": portable(want, b.namespace)},
			}},
		})
	}
	return steps
}

// createdWith is the part of a created Pod's spec that import expects:
// the node selector, tolerations and volumes, and of each container (and
// init container) its name, env and volume mounts.
func createdWith(spec map[string]any) map[string]any {
	out := map[string]any{}
	for _, f := range []string{"nodeSelector", "tolerations", "volumes"} {
		if v, ok := spec[f]; ok && !empty(v) {
			out[f] = v
		}
	}
	for _, f := range []string{"initContainers", "containers"} {
		list, _ := spec[f].([]any)
		var cs []any
		for _, c := range list {
			m, _ := c.(map[string]any)
			if m == nil {
				continue
			}
			kept := map[string]any{"name": m["name"]}
			for _, cf := range []string{"env", "volumeMounts"} {
				if v, ok := m[cf]; ok && !empty(v) {
					kept[cf] = v
				}
			}
			if len(kept) > 1 {
				cs = append(cs, kept)
			}
		}
		if len(cs) > 0 {
			out[f] = cs
		}
	}
	return out
}

// empty reports whether a JSON value is an empty list or object.
func empty(v any) bool {
	switch v := v.(type) {
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return v == nil
}
