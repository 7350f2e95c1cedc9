package explore

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

const scenarioYAML = `
apiVersion: sim.trainersim.dev/v1alpha1
kind: Scenario
metadata:
  name: two-writes
spec:
  components: [kueue]
  steps:
  - name: created
    actor: sdk
    create: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
    expect: {within: 10s, pods: {count: 0}}
  - name: waits
    expect: {pods: {count: 0}}
  - name: patched
    actor: sdk
    patch: {type: merge, target: {kind: ConfigMap, name: a}, body: {data: {b: c}}}
    expect: {pods: {count: 0}}
`

func load(t *testing.T) *v1alpha1.Scenario {
	t.Helper()
	var sc v1alpha1.Scenario
	if err := yaml.Unmarshal([]byte(scenarioYAML), &sc); err != nil {
		t.Fatal(err)
	}
	return &sc
}

func stepNames(sc *v1alpha1.Scenario) []string {
	var out []string
	for _, st := range sc.Spec.Steps {
		name := st.Name
		if st.Expect != nil {
			name += " +expect"
		}
		out = append(out, name)
	}
	return out
}

// TestPlans: a plan per write step, component and kind, Kueue first; no
// restart after the last step; none for a scenario that states a
// component step of its own.
func TestPlans(t *testing.T) {
	sc := load(t)
	var got []string
	for _, p := range Plans(sc, Components(sc, false)) {
		got = append(got, p.ID())
	}
	want := []string{
		"two-writes--restart-kueue-step-1", "two-writes--down-kueue-step-1",
		"two-writes--restart-trainer-step-1", "two-writes--down-trainer-step-1", "two-writes--stale-trainer-step-1",
		"two-writes--restart-jobset-step-1", "two-writes--down-jobset-step-1",
		"two-writes--down-kueue-step-3", "two-writes--down-trainer-step-3", "two-writes--down-jobset-step-3",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plans (-want +got):\n%s", diff)
	}
	plans := Plans(sc, Components(sc, false))
	if plans[1].Write != "create ConfigMap" || plans[len(plans)-1].Write != "patch ConfigMap" {
		t.Errorf("writes: %q, %q", plans[1].Write, plans[len(plans)-1].Write)
	}
	if left := Refused(plans, map[string]bool{"kueue create ConfigMap": true}); len(left) != len(plans)-1 || slices.ContainsFunc(left, func(p Plan) bool { return p.ID() == "two-writes--down-kueue-step-1" }) {
		t.Errorf("Refused left %d of %d plans", len(left), len(plans))
	}
	if diff := cmp.Diff([]string{"kueue", "trainer", "jobset", "kube-controller-manager", "kube-scheduler", "kwok"}, Components(sc, true)); diff != "" {
		t.Errorf("components with the cluster's (-want +got):\n%s", diff)
	}
	sc.Spec.Views = []v1alpha1.View{{Name: "v", Component: "trainer"}}
	for _, p := range Plans(sc, Components(sc, false)) {
		if p.Component == "trainer" {
			t.Errorf("a plan of the Trainer, whose watches a view of the scenario sees: %s", p.ID())
		}
	}
	sc.Spec.Views = nil
	sc.Spec.Steps[1].Concurrently = &v1alpha1.Concurrently{Interleavings: &v1alpha1.Interleavings{}}
	if p := Plans(sc, Components(sc, false)); len(p) != 0 {
		t.Errorf("a scenario that explores interleavings got plans: %v", p)
	}
	sc.Spec.Steps[1].Concurrently = nil
	sc.Spec.Steps[1].Component = &v1alpha1.ComponentAction{Name: "kueue", Action: v1alpha1.ComponentCrash}
	if p := Plans(sc, Components(sc, false)); len(p) != 0 {
		t.Errorf("a scenario with a component step got plans: %v", p)
	}
}

// TestApply: a restart is a step after the step; down crashes before the
// write and starts again before its expectations, a step of their own.
func TestApply(t *testing.T) {
	sc := load(t)
	restart := Plan{Scenario: "two-writes", Kind: Restart, Component: "trainer", Step: 0, StepName: "created"}.Apply(sc)
	if diff := cmp.Diff([]string{"created +expect", "explore: trainer restarts", "waits +expect", "patched +expect"}, stepNames(restart)); diff != "" {
		t.Errorf("restart's steps (-want +got):\n%s", diff)
	}
	if a := restart.Spec.Steps[1].Component; a == nil || a.Name != "trainer" || a.Action != v1alpha1.ComponentRestart {
		t.Errorf("restart's step: %+v", a)
	}
	sc.Spec.Gates = []v1alpha1.Gate{{Name: "held-until-patched", Until: "patched"}}
	down := Plan{Scenario: "two-writes", Kind: Down, Component: "kueue", Step: 2, StepName: "patched"}.Apply(sc)
	if got := down.Spec.Gates[0].Until; got != "patched: its expectations" {
		t.Errorf("a gate open after the write's step is open after %q, want after the step's expectations", got)
	}
	if diff := cmp.Diff([]string{"created +expect", "waits +expect", "explore: kueue crashes", "patched", "explore: kueue starts again", "patched: its expectations +expect"}, stepNames(down)); diff != "" {
		t.Errorf("down's steps (-want +got):\n%s", diff)
	}
	if got := down.Metadata.Annotations[PlanAnnotation]; got != "two-writes--down-kueue-step-3" {
		t.Errorf("annotation %s: %q", PlanAnnotation, got)
	}
	if down.Metadata.Name != "two-writes-down-kueue-3" {
		t.Errorf("name %q", down.Metadata.Name)
	}
	if stepNames(sc)[2] != "patched +expect" {
		t.Errorf("Apply changed the scenario it was given: %v", stepNames(sc))
	}
	stale := Plan{Scenario: "two-writes", Kind: Stale, Component: "trainer", Step: 0, StepName: "created", Resource: "configmaps"}.Apply(load(t))
	restartStale := "explore: trainer restarts and lists configmaps as before step 1"
	if diff := cmp.Diff([]string{"created +expect", restartStale, "waits +expect", "patched +expect"}, stepNames(stale)); diff != "" {
		t.Errorf("stale's steps (-want +got):\n%s", diff)
	}
	want := []v1alpha1.View{{Name: "explore-stale-configmaps", Component: "trainer", Resource: "configmaps", StaleList: true, From: "created", Until: restartStale}}
	if diff := cmp.Diff(want, stale.Spec.Views); diff != "" {
		t.Errorf("stale's views (-want +got):\n%s", diff)
	}
	long := Plan{Scenario: "x", Kind: Restart, Component: "kube-controller-manager", Step: 2}
	sc.Metadata.Name = "a-scenario-whose-name-is-already-fifty-characters"
	if n := long.Apply(sc).Metadata.Name; len(n) > 63 || n[0] == '-' {
		t.Errorf("name %q: over 63 characters or starts with -", n)
	}
}

func run(passed bool, pods []results.Pod, failedStep string) results.Scenario {
	sc := results.Scenario{Passed: passed, FinalPods: pods, FinalOwners: []results.EntryOwners{{TrainJob: "low", Entry: "kueue.x-k8s.io/manager", Managers: []string{"kueue-admission"}}}}
	if failedStep != "" {
		sc.Steps = []results.Step{{Name: "before", Passed: true}, {Name: failedStep, Failure: "failed calling webhook \"mtrainjob.kb.io\": connection refused"}}
	}
	return sc
}

// TestJudge: what two references differ in is masked; a Pod's generated
// suffix is not a difference; a plan's failed step is a finding, but a
// Down plan's write refused by the down component's webhook.
func TestJudge(t *testing.T) {
	ref1 := run(true, []results.Pod{{Name: "low-node-0-0-x7k2p", Phase: "Running", NodeProfile: "h100"}, {Name: "other-0-bcd23", Phase: "Running"}}, "")
	ref2 := run(true, []results.Pod{{Name: "low-node-0-0-q9zzz", Phase: "Running", NodeProfile: "h100"}, {Name: "other-0-bcd45", Phase: "Pending"}}, "")
	want, noise := EndStateOf(ref1), Noise(EndStateOf(ref1), EndStateOf(ref2))
	if diff := cmp.Diff(map[string]bool{"pod other-0-*": true}, noise); diff != "" {
		t.Errorf("noise (-want +got):\n%s", diff)
	}
	p := Plan{Kind: Down, Component: "trainer", StepName: "write"}
	same := run(true, []results.Pod{{Name: "low-node-0-0-mmmmm", Phase: "Running", NodeProfile: "h100"}, {Name: "other-0-bcd99", Phase: "Failed"}}, "")
	if v := Judge(p, want, noise, same); v.Kind != Same {
		t.Errorf("a run that differs in noise only: %+v", v)
	}
	pending := run(true, []results.Pod{{Name: "low-node-0-0-mmmmm", Phase: "Pending", Scheduling: "(Unschedulable: 0/269 nodes are available: 268 node(s) had untolerated taint(s).)"}}, "")
	v := Judge(p, want, noise, pending)
	if diff := cmp.Diff(Verdict{Kind: Found, Differences: []Difference{{Key: "pod low-node-0-0-*", Want: "Running h100", Got: "Pending  Unschedulable"}}}, v); diff != "" {
		t.Errorf("a Pod left pending (-want +got):\n%s", diff)
	}
	// A TrainJob suspended with its Pod running breaks an invariant; the
	// reference's TrainJob ran.
	ref1.FinalTrainJobs = []results.TrainJobState{{Name: "low", Conditions: []string{"Suspended=False Resumed"}}}
	suspended := run(true, []results.Pod{{Name: "low-node-0-0-mmmmm", Phase: "Running", NodeProfile: "h100", JobSet: "low"}, {Name: "other-0-bcd99", Phase: "Failed"}}, "")
	suspended.FinalTrainJobs = []results.TrainJobState{{Name: "low", Suspended: true, Conditions: []string{"Suspended=True Suspended"}}}
	v = Judge(p, EndStateOf(ref1), noise, suspended)
	if diff := cmp.Diff(Verdict{Kind: Found, Differences: []Difference{
		{Key: "invariant: suspended trainjob low has no running Pods", Got: "broken"},
		{Key: "trainjob low conditions", Got: "Suspended Suspended"},
		{Key: "trainjob low suspended", Want: "false", Got: "true"},
	}}, v); diff != "" {
		t.Errorf("a suspended TrainJob's Pod left running (-want +got):\n%s", diff)
	}
	// A resume the Trainer never saw leaves no Suspended=False Resumed:
	// history, not state.
	unseen := run(true, []results.Pod{{Name: "low-node-0-0-mmmmm", Phase: "Running", NodeProfile: "h100", JobSet: "low"}}, "")
	unseen.FinalTrainJobs = []results.TrainJobState{{Name: "low"}}
	if v := Judge(p, EndStateOf(ref1), noise, unseen); v.Kind != Same {
		t.Errorf("a TrainJob without the Resumed condition of the reference's: %+v", v)
	}
	// A scenario with a concurrently group leaves the entries' owners to
	// its race.
	other := run(true, []results.Pod{{Name: "low-node-0-0-mmmmm", Phase: "Running", NodeProfile: "h100"}, {Name: "other-0-bcd99", Phase: "Failed"}}, "")
	other.FinalOwners = []results.EntryOwners{{TrainJob: "low", Entry: "policy", Managers: []string{"platform-policy"}}}
	if v := Judge(p, want, noise, other); v.Kind != Found {
		t.Errorf("other owners, no race stated: %+v", v)
	}
	raced := &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{{Concurrently: &v1alpha1.Concurrently{}}}}}
	if v := Judge(p, want, Races(raced, noise), other); v.Kind != Same {
		t.Errorf("other owners, a race stated: %+v", v)
	}
	if v := Judge(p, want, noise, run(false, nil, "write")); v.Kind != Closed {
		t.Errorf("the down component's webhook refused the write: %+v", v)
	}
	if v := Judge(p, want, noise, run(false, nil, "explore: trainer starts again")); v.Kind != NotCarriedOut {
		t.Errorf("the plan's own start failed: %+v", v)
	}
	if v := Judge(p, want, noise, run(false, nil, "a later step")); v.Kind != Found || v.Signature() != "failed at a later step" {
		t.Errorf("a later step failed: %+v", v)
	}
}
