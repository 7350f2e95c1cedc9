package runner

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
)

// TestChangedBy: what a conflict lost to are the writes of the object after
// the resourceVersion the refused request carried, the scenario's and the
// components' alike, oldest first; other objects, refused requests and
// older versions are not.
func TestChangedBy(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	own := []ownWrite{
		{kind: "TrainJob", name: "llm", who: "actor sdk", verb: "create", rv: "10", at: at(0)},
		{kind: "TrainJob", name: "llm", who: "actor user", verb: "patch", rv: "14", at: at(40)},
		{kind: "TrainJob", name: "other", who: "actor user", verb: "patch", rv: "15", at: at(50)},
		{kind: "JobSet", name: "llm", who: "the harness", verb: "update", rv: "16", at: at(60)},
		{kind: "TrainJob", name: "llm", who: "actor user", verb: "patch", rv: "20", at: at(200)},
	}
	reqs := []cluster.ComponentRequest{
		{At: at(20), Component: "trainer", Verb: "patch", Resource: "trainjobs", Subresource: "status", Name: "llm", Code: 200, ResourceVersion: "12"},
		{At: at(10), Component: "kueue", Verb: "update", Resource: "trainjobs", Name: "llm", Code: 200, ResourceVersion: "11"},
		{At: at(45), Component: "kueue", Verb: "update", Resource: "trainjobs", Name: "llm", Code: 200, ResourceVersion: "14"},
		{At: at(90), Component: "kueue", Verb: "patch", Resource: "trainjobs", Name: "llm", Code: 409, SentResourceVersion: "11"},
		{At: at(30), Component: "jobset", Verb: "create", Resource: "jobs", Name: "llm", Code: 201, ResourceVersion: "13"},
	}
	// Kueue's update at 45 ms changed nothing (the version it answered is
	// the user's); the user's patch at 200 ms came after the refusal.
	got := changedBy("TrainJob", "llm", "11", at(90), own, reqs)
	want := []string{"trainer's patch of trainjobs/status (resourceVersion 12)", "actor user's patch (resourceVersion 14)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changedBy mismatch (-want +got):\n%s", diff)
	}
	if got := changedBy("TrainJob", "llm", "", at(90), own, reqs); got != nil {
		t.Errorf("without a resourceVersion: %v, want nothing", got)
	}
	w := &results.Write{Reason: "Conflict", ResourceVersionBefore: "11", ChangedBy: want}
	if diff := cmp.Diff("; the object changed since resourceVersion 11: trainer's patch of trainjobs/status (resourceVersion 12), actor user's patch (resourceVersion 14)", lostTo(w)); diff != "" {
		t.Errorf("lostTo mismatch (-want +got):\n%s", diff)
	}
}

// TestWriteTargets: a target prints as the reports have always printed it.
func TestWriteTargets(t *testing.T) {
	sel := &v1alpha1.Target{Kind: "Pod", Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}
	status := selectorTarget(sel, "ns")
	status.subresource = "status"
	for want, target := range map[string]writeTarget{
		"TrainJob ns-1/llm":     {kind: "TrainJob", namespace: "ns-1", name: "llm"},
		"Pod ns/[app=x]":        selectorTarget(sel, "ns"),
		"Pod ns/[app=x] status": status,
		"Node sim-1-h100-0":     {kind: "Node", name: "sim-1-h100-0"},
		"gate admits":           {kind: "gate", name: "admits"},
	} {
		if got := target.String(); got != want {
			t.Errorf("%+v prints %q, want %q", target, got, want)
		}
	}
}
