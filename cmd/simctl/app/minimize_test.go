package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/minimize"
)

func TestOutcomeOf(t *testing.T) {
	failed := func(ns, failure string) results.Scenario {
		return results.Scenario{Namespace: ns, Failure: "step \"pods\": " + failure, Steps: []results.Step{
			{Name: "create", Passed: true},
			{Name: "pods", Failure: failure + "\n(-want +got) ..."},
		}}
	}
	// Two runs of one candidate (no step of it depends on the run) fail
	// alike, their namespace, nodes and cut waits aside.
	a := outcomeOf([]results.Scenario{failed("imported-llm-0a1b2c", "not true within 30s: Pod imported-llm-0a1b2c/llm-node-0-0-x7q2z on sim-0a1b2c-gpu-0 is Pending")}, 1)
	b := outcomeOf([]results.Scenario{failed("imported-llm-ffee00", "not true within 2s: Pod imported-llm-ffee00/llm-node-0-0-bb4k9 on sim-ffee00-gpu-0 is Pending")}, 1)
	want := minimize.Outcome{Step: "pods", Failure: "not true within its time: Pod <namespace>/llm-node-0-0-<generated> on <nodes>-gpu-0 is Pending"}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("outcome mismatch (-want +got):\n%s", diff)
	}
	if !a.Same(b) {
		t.Errorf("%v and %v are not the same", a, b)
	}
	if got := outcomeOf([]results.Scenario{{Passed: true}, {Passed: true}}, 1); !got.Passed {
		t.Errorf("two passing runs (two orders): %v", got)
	}
	if got := outcomeOf([]results.Scenario{{Passed: true}, failed("x-000000", "refused")}, 1); got.Passed || got.Step != "pods" {
		t.Errorf("one order of two failing: %v", got)
	}

	// The scheduler's tally counts the nodes of the runs beside it (or
	// before it, on a discarded cluster): taken out, one node's run fails
	// alike whatever ran before it; a reason of its own node stays.
	pending := "not true within 1m0s: pod x-000000/high-node-0-0-qtdns is Pending, want Running (Unschedulable: %s. no new claims to deallocate, preemption: %s.)"
	alone := outcomeOf([]results.Scenario{failed("x-000000", fmt.Sprintf(pending, "0/1 nodes are available: 1 Insufficient nvidia.com/gpu", "0/1 nodes are available: 1 No preemption victims found for incoming pod"))}, 1)
	beside := outcomeOf([]results.Scenario{failed("x-000000", fmt.Sprintf(pending, "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint(s)", "0/4 nodes are available: 1 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling"))}, 1)
	if !alone.Same(beside) {
		t.Errorf("the same failure beside three other nodes is another:\n%s\n%s", alone.Failure, beside.Failure)
	}
	tainted := outcomeOf([]results.Scenario{failed("x-000000", fmt.Sprintf(pending, "0/3 nodes are available: 3 node(s) had untolerated taint(s)", "0/3 nodes are available: 3 Preemption is not helpful for scheduling"))}, 1)
	if want := "(Unschedulable: 0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.)"; !strings.HasSuffix(tainted.Failure, want) {
		t.Errorf("its own node's taint: %q, want it to end with %q", tainted.Failure, want)
	}
	if tainted.Same(alone) {
		t.Errorf("a taint and a full node are the same failure: %s", tainted.Failure)
	}
}

func TestCutWaits(t *testing.T) {
	sc := &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{
		{Name: "quick", Expect: &v1alpha1.Expect{}},
		{Name: "slow", Expect: &v1alpha1.Expect{Within: v1alpha1.Duration{Duration: 90 * time.Second}}},
		{Name: "timed out", Expect: &v1alpha1.Expect{Within: v1alpha1.Duration{Duration: 10 * time.Second}}},
		{Name: "new", Expect: &v1alpha1.Expect{}},
	}}}
	c := &candidates{took: map[string]time.Duration{"quick": 100 * time.Millisecond, "slow": 3 * time.Second, "timed out": 10 * time.Second}}
	c.cutWaits(sc)
	var got []time.Duration
	for _, st := range sc.Spec.Steps {
		got = append(got, st.Expect.Within.Duration)
	}
	// At least minWait, five times what the original took, at most the
	// step's own within; a step the original did not run keeps its own.
	want := []time.Duration{minWait, 15 * time.Second, 10 * time.Second, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withins mismatch (-want +got):\n%s", diff)
	}
	c.verifying = true
	sc.Spec.Steps[0].Expect.Within.Duration = 0
	c.cutWaits(sc)
	if w := sc.Spec.Steps[0].Expect.Within.Duration; w != 0 {
		t.Errorf("a verification run's wait was cut to %s", w)
	}
}
