package auditimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/identity"
)

// The status of a TrainJob's JobSet when a manager wrote: the Trainer
// refuses a change of runtimePatches while the JobSet counts a Job of it
// active, so a write accepted once the Jobs stopped (or refused while
// they ran) meets the same JobSet on replay. The log has it when the
// JobSet controller's status writes are recorded at level RequestResponse
// (RecordPolicy does).

// jobSetAPIVersion is the JobSets' API version.
const jobSetAPIVersion = "jobset.x-k8s.io/v1alpha2"

// jobSetStatus is the status a write of a JobSet's status left: its
// replicated jobs' counts, without the ready count.
type jobSetStatus struct {
	name   string
	status map[string]any
	// at is when the write was answered, received when it was received.
	at, received time.Time
}

// jobSetStatusWrite returns ev as a successful write of the status of a
// JobSet of namespace, with the status it left.
func jobSetStatusWrite(ev *event, namespace string) (jobSetStatus, bool) {
	ref := ev.ObjectRef
	if ref == nil || ref.Resource != "jobsets" || ref.APIGroup != "jobset.x-k8s.io" || ref.Subresource != "status" || ref.Namespace != namespace {
		return jobSetStatus{}, false
	}
	if ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 || (ev.Verb != "update" && ev.Verb != "patch") {
		return jobSetStatus{}, false
	}
	var obj struct {
		Status map[string]any `json:"status"`
	}
	if json.Unmarshal(ev.ResponseObject, &obj) != nil || len(obj.Status) == 0 {
		return jobSetStatus{}, false
	}
	// Only the replicated jobs' counts, which the Trainer's check reads:
	// the JobSet's conditions depend on what its controller saw (it
	// reports Suspended False, ResumeJobs, only if it saw the JobSet
	// suspended, which on replay it may be created after the resume).
	status, _ := stable(obj.Status).(map[string]any)
	jobs, ok := status["replicatedJobsStatus"]
	if !ok {
		return jobSetStatus{}, false
	}
	return jobSetStatus{name: ref.Name, status: map[string]any{"replicatedJobsStatus": jobs}, at: ev.Completed, received: ev.Received}, true
}

// jobSetBefore expects TrainJob w.name's JobSet (of the same name) with the
// status its last status write before w left, or any its later writes
// left (matchAny, laterStatus): on replay the JobSet controller may skip
// one, or be further on; a write that raced w (received before it,
// answered after) counts as one before it too, as in statusWait. Nil when
// the log has no status of it before w.
//
// Only before a write that sends runtimePatches (the Trainer's check of
// the JobSet is theirs) or suspends the TrainJob: before any other write
// the JobSet may be further on replay than any status the log shows (its
// Jobs counted active where on the cluster the manager's write came
// first). Before a suspend, the JobSet's report that its Job runs is what
// tells the counts after the suspension ("none active, one suspended")
// from the same counts before the Job ran: kueue-readmission-new-flavor's
// recording had the JobSet controller report the resumed Job active before
// Kueue's preemption, the Trainer only after it; a shaken replay preempted
// before the JobSet controller's report, the Trainer reported the job
// Suspended with the counts from before the resume, the wait before Kueue's
// clear of its entry passed on them, and the Trainer's webhook, whose
// cache then had the Job active, refused the clear (CI's round trip).
func (b *builder) jobSetBefore(w *write, writes []*write) *v1alpha1.ObjectExpectation {
	if w.kind != trainJobKind || w.ev.Verb == "create" || !bytes.Contains(w.ev.RequestObject, []byte("runtimePatches")) && !suspends(w, writes) {
		return nil
	}
	last := -1
	for i, s := range b.jobSets {
		if s.name == w.name && !s.at.After(w.ev.Received) {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	var earlier []map[string]any
	for _, s := range b.jobSets[:last] {
		if s.name == w.name {
			earlier = append(earlier, s.status)
		}
	}
	statuses := []map[string]any{b.jobSets[last].status}
	reactions := reactionsFrom(w.name, w, writes)
	for _, s := range b.jobSets[last+1:] {
		switch {
		case s.name != w.name, !reactions.IsZero() && s.received.After(reactions):
		case !s.received.After(w.ev.Received):
			// Raced w: accepted even as a status of before (statusWait).
			statuses = laterStatus(statuses, nil, s.status)
		default:
			statuses = laterStatus(statuses, earlier, s.status)
		}
	}
	at := b.jobSets[last].at
	exp := &v1alpha1.ObjectExpectation{Target: v1alpha1.Target{APIVersion: jobSetAPIVersion, Kind: "JobSet", Name: w.name}, Reached: true,
		ReachedSince: b.sinceStep(w.name, func(o *write) bool { return !o.ev.Completed.After(at) })}
	if len(statuses) == 1 {
		exp.Match = v1alpha1.Object{"status": statuses[0]}
		return exp
	}
	for _, s := range statuses {
		exp.MatchAny = append(exp.MatchAny, v1alpha1.Object{"status": s})
	}
	return exp
}

// laterStatus adds s to statuses, the statuses a wait accepts, unless it
// is one of them already or one of earlier, the statuses before the
// wait's: a JobSet running again after a resume looks as it did before it
// was suspended, and must not let a wait for the suspension pass before
// the suspension took effect.
func laterStatus(statuses, earlier []map[string]any, s map[string]any) []map[string]any {
	equal := func(t map[string]any) bool { return reflect.DeepEqual(s, t) }
	if slices.ContainsFunc(statuses, equal) || slices.ContainsFunc(earlier, equal) {
		return statuses
	}
	return append(statuses, s)
}

// decidedBefore keeps the order the log shows between a write of
// runtimePatches that the Trainer refused while a Job of the JobSet was
// active (its webhook reads the JobSet: "RuntimePatches cannot be modified
// when the JobSet's ReplicatedJob node is still active") and the JobSet
// controller's report that the Job stopped: a gate holds that report until
// the write's step, so that on replay the refusal is decided on the same
// JobSet rather than on whichever came first. The report is the JobSet
// controller's first change of a replicated job's active count after the
// write, from the count the JobSet had at the write, that it had not made
// before it (the gate is shut from the scenario's start: it must not hold
// a change the steps before the write wait for). Nil when the write was
// not refused (403, 422), or the log has no such change.
func (b *builder) decidedBefore(w *write, step string) *v1alpha1.Gate {
	if w.kind != trainJobKind || w.ev.ResponseStatus == nil || (w.ev.ResponseStatus.Code != 403 && w.ev.ResponseStatus.Code != 422) || !bytes.Contains(w.ev.RequestObject, []byte("runtimePatches")) {
		return nil
	}
	change := func(job string, from, to any) string { return fmt.Sprint(job, " ", from, " ", to) }
	// The active counts by replicated job: at the write, and as the last
	// status write left them.
	var at, last map[string]any
	var made []string
	for _, s := range b.jobSets {
		if s.name != w.name {
			continue
		}
		before, active := last, activeCounts(s.status)
		last = active
		if !s.at.After(w.ev.Received) {
			for job, n := range active {
				if before != nil && fmt.Sprint(before[job]) != fmt.Sprint(n) {
					made = append(made, change(job, before[job], n))
				}
			}
			at = active
			continue
		}
		if at == nil || !s.at.After(w.ev.Completed) {
			continue
		}
		jobs := slices.Sorted(maps.Keys(active))
		for _, job := range jobs {
			from, to := before[job], active[job]
			if fmt.Sprint(from) == fmt.Sprint(to) || fmt.Sprint(from) != fmt.Sprint(at[job]) || slices.Contains(made, change(job, from, to)) {
				continue
			}
			return &v1alpha1.Gate{
				Name:       "jobset-until-step-" + strings.SplitN(step, ":", 2)[0],
				Component:  identity.JobSet,
				Resource:   "jobsets/status",
				ObjectName: w.name,
				Change:     &v1alpha1.GateChange{Field: fmt.Sprintf("status.replicatedJobsStatus[name=%s].active", job), From: from, To: to},
				Until:      step,
			}
		}
	}
	return nil
}

// activeCounts are a JobSet status's active counts by replicated job (nil
// for a job whose count is absent: none active).
func activeCounts(status map[string]any) map[string]any {
	out := map[string]any{}
	list, _ := status["replicatedJobsStatus"].([]any)
	for _, j := range list {
		if j, ok := j.(map[string]any); ok {
			if name, ok := j["name"].(string); ok {
				out[name] = j["active"]
			}
		}
	}
	return out
}
