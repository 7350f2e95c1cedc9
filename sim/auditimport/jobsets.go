package auditimport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"time"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// The status of a TrainJob's JobSet when a manager wrote: the Trainer
// refuses a change of runtimePatches while the JobSet counts a Job of it
// active, so a write accepted once the Jobs stopped (or refused while
// they ran) meets the same JobSet on replay. The log has it when the
// JobSet controller's status writes are recorded at level RequestResponse
// (RecordPolicy does).

// jobSetAPIVersion is the JobSets' API version.
const jobSetAPIVersion = "jobset.x-k8s.io/v1alpha2"

// jobSetStatus is the status a write of a JobSet's status left, without
// times and messages.
type jobSetStatus struct {
	name   string
	status map[string]any
	at     time.Time
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
	status, _ := stable(obj.Status).(map[string]any)
	return jobSetStatus{name: ref.Name, status: status, at: ev.Completed}, true
}

// jobSetBefore expects TrainJob w.name's JobSet (of the same name) with the
// status its last status write before w left, or any its later writes
// left (matchAny, laterStatus): on replay the JobSet controller may skip
// one, or be further on. Nil when the log has no status of it before w.
//
// Only before a write that sends runtimePatches: the Trainer's check of
// the JobSet is theirs, and before any other write the JobSet may be
// further on replay than any status the log shows (its Jobs counted
// active where on the cluster the manager's write came first).
func (b *builder) jobSetBefore(w *write) *v1alpha1.ObjectExpectation {
	if w.kind != trainJobKind || w.ev.Verb == "create" || !bytes.Contains(w.ev.RequestObject, []byte("runtimePatches")) {
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
	for _, s := range b.jobSets[last+1:] {
		if s.name == w.name {
			statuses = laterStatus(statuses, earlier, s.status)
		}
	}
	exp := &v1alpha1.ObjectExpectation{Target: v1alpha1.Target{APIVersion: jobSetAPIVersion, Kind: "JobSet", Name: w.name}}
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
