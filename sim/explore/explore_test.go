package explore

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
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
	if n := long.Apply(sc).Metadata.Name; n != "a-scenario-whose-name-is-alre-restart-kube-controller-manager-3" {
		t.Errorf("name %q: the scenario's name cut, the plan's part whole, within 63 characters", n)
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
// Down plan's write refused by the down component's webhook, and a
// crash's request so refused.
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
	// A crash's run whose step failed on another writer's request that
	// the crashed component's webhook refused while it was down: what a
	// cluster does. Without such a refusal, a finding.
	for _, kind := range []string{Restart, Stale, Intermediate} {
		crash := Plan{Kind: kind, Component: "kueue", StepName: "write"}
		if v := Judge(crash, want, noise, run(false, nil, "a later step")); v.Kind != Closed {
			t.Errorf("%s: a request refused by the crashed component's webhook: %+v", kind, v)
		}
		other := run(false, nil, "a later step")
		other.Steps[1].Failure = "no kueue's patch of TrainJob/llm answered 409; its requests about it: patch: 200"
		if v := Judge(crash, want, noise, other); v.Kind != Found {
			t.Errorf("%s: a later step failed otherwise: %+v", kind, v)
		}
	}
}

// kueueScenarioYAML is the shape of real-kueue/preemption-by-higher-priority:
// a job runs, a second arrives, Kueue preempts the first.
const kueueScenarioYAML = `
apiVersion: sim.trainersim.dev/v1alpha1
kind: Scenario
metadata:
  name: preemption
spec:
  components: [kueue]
  actors:
  - name: sdk
    fieldManager: kubeflow-sdk
  steps:
  - name: low runs
    actor: sdk
    create: {apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, metadata: {name: low}, spec: {runtimeRef: {name: torch}}}
    expect:
      within: 60s
      pods: {selector: {matchLabels: {app: low}}, count: 1, phase: Running}
      objects:
      - target: {kind: TrainJob, name: low}
        match: {status: {jobsStatus: [{name: node, active: 1}]}}
      - target: {kind: TrainJob, name: low}
        match: {spec: {suspend: false}}
  - name: high arrives
    actor: sdk
    create: {apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, metadata: {name: high}, spec: {runtimeRef: {name: torch}}}
  - name: kueue preempts low
    expect:
      within: 60s
      pods: {selector: {matchLabels: {app: high}}, count: 1, phase: Running}
`

// preemptionChanges are the writes to TrainJob low (and its JobSet's
// status) a reference run of it records: in the first step Kueue
// unsuspends it, the Trainer reports it resumed, the JobSet controller
// reports its Job resumed and then active, and the Trainer copies both
// counts (only the active one is a twin's: the suspended count's write
// comes first, and the JobSet controller's worker held on it would keep
// the Job from resuming); Kueue suspends the job and clears its entry in the third.
func preemptionChanges() []results.ObjectChange {
	return []results.ObjectChange{
		{Step: "low runs", Writer: "sdk", Actor: true, Verb: "create", Kind: "TrainJob", Resource: "trainjobs", Name: "low"},
		{Step: "low runs", Writer: "kueue", Verb: "patch", Kind: "TrainJob", Resource: "trainjobs", Name: "low", Fields: []results.FieldDiff{{Path: "spec.suspend", From: "true", To: "false"}}},
		{Step: "low runs", Writer: "trainer", Verb: "patch", Kind: "TrainJob", Resource: "trainjobs/status", Name: "low", Fields: []results.FieldDiff{
			{Path: "status.conditions[type=Suspended].lastTransitionTime", From: `"a"`, To: `"b"`},
			{Path: "status.conditions[type=Suspended].status", From: `"True"`, To: `"False"`}}},
		{Step: "low runs", Writer: "jobset", Verb: "update", Kind: "JobSet", Resource: "jobsets/status", Name: "low", Fields: []results.FieldDiff{{Path: "status.replicatedJobsStatus[name=node].suspended", From: "1", To: "0"}}},
		{Step: "low runs", Writer: "jobset", Verb: "update", Kind: "JobSet", Resource: "jobsets/status", Name: "low", Fields: []results.FieldDiff{{Path: "status.replicatedJobsStatus[name=node].active", From: "0", To: "1"}}},
		{Step: "low runs", Writer: "trainer", Verb: "patch", Kind: "TrainJob", Resource: "trainjobs/status", Name: "low", Fields: []results.FieldDiff{
			{Path: "status.jobsStatus[name=node].active", From: "0", To: "1"},
			{Path: "status.jobsStatus[name=node].suspended", From: "1", To: "0"}}},
		{Step: "kueue preempts low", Writer: "kueue", Verb: "update", Kind: "TrainJob", Resource: "trainjobs", Name: "low", Fields: []results.FieldDiff{{Path: "spec.suspend", From: "false", To: "true"}}},
		{Step: "kueue preempts low", Writer: "kueue", Verb: "patch", Kind: "TrainJob", Resource: "trainjobs", Name: "low", Fields: []results.FieldDiff{
			{Path: "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec", To: "{}"},
			{Path: "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec.replicatedJobs[name=node].template.spec.template.spec.nodeSelector.gpu", From: `"h100"`}}},
	}
}

// TestFlips: a plan for each component's write and each later write of
// another writer to the same TrainJob that both reference runs order so,
// the controllers' pairs first, a flip of a status write followed by its
// twin that holds the JobSet's next status write too; none for an order
// the other run did not show, nor for the second of two like writes, nor
// for a JobSet's write alone.
func TestFlips(t *testing.T) {
	sc := kueueScenario(t)
	changes := preemptionChanges()
	var got []string
	for _, p := range Flips(sc, changes, changes) {
		got = append(got, p.ID()+": "+p.String())
	}
	want := []string{
		"preemption--flip-kueue-step-1-382f9e93: kueue's patch of trainjobs low (spec.suspend to false), in step 1, is held until trainer's patch of trainjobs/status low (status.conditions[type=Suspended].status to \"False\"), in step 1, has landed",
		"preemption--flip-kueue-step-1-05e45433: kueue's patch of trainjobs low (spec.suspend to false), in step 1, is held until trainer's patch of trainjobs/status low (status.jobsStatus[name=node].active to 1), in step 1, has landed",
		"preemption--flip-trainer-step-1-7f17e0a8: trainer's patch of trainjobs/status low (status.conditions[type=Suspended].status to \"False\"), in step 1, is held until kueue's update of trainjobs low (spec.suspend to true), in step 3, has landed",
		"preemption--flip-trainer-step-1-a4acf2b2: trainer's patch of trainjobs/status low (status.conditions[type=Suspended].status to \"False\"), in step 1, and jobset's update of jobsets/status low (status.replicatedJobsStatus[name=node].active to 1) after it are held until kueue's update of trainjobs low (spec.suspend to true), in step 3, has landed",
		"preemption--flip-trainer-step-1-a0d3e360: trainer's patch of trainjobs/status low (status.conditions[type=Suspended].status to \"False\"), in step 1, is held until kueue's patch of trainjobs low (spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec to {}), in step 3, has landed",
		"preemption--flip-trainer-step-1-08e1341a: trainer's patch of trainjobs/status low (status.conditions[type=Suspended].status to \"False\"), in step 1, and jobset's update of jobsets/status low (status.replicatedJobsStatus[name=node].active to 1) after it are held until kueue's patch of trainjobs low (spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec to {}), in step 3, has landed",
		"preemption--flip-trainer-step-1-d9005296: trainer's patch of trainjobs/status low (status.jobsStatus[name=node].active to 1), in step 1, is held until kueue's update of trainjobs low (spec.suspend to true), in step 3, has landed",
		"preemption--flip-trainer-step-1-7be42bfa: trainer's patch of trainjobs/status low (status.jobsStatus[name=node].active to 1), in step 1, is held until kueue's patch of trainjobs low (spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec to {}), in step 3, has landed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flips (-want +got):\n%s", diff)
	}
	// A flip's ID does not depend on the other flips the runs give.
	fewer := slices.Delete(slices.Clone(changes), 1, 2) // no unsuspend of Kueue's
	if ids := planIDs(Flips(sc, fewer, fewer)); !slices.Contains(ids, "preemption--flip-trainer-step-1-7be42bfa") {
		t.Errorf("the flip's ID changed with the other flips: %v", ids)
	}
	// The other run reported the Job active after Kueue's clear: the two
	// runs disagree on that order, which is no order to flip.
	other := slices.Clone(changes)
	other[5], other[7] = other[7], other[5]
	for _, p := range Flips(sc, changes, other) {
		if p.Held.Field == "status.jobsStatus[name=node].active" && p.Until.Field != "spec.suspend" {
			t.Errorf("a flip of an order the runs disagree on: %s", p)
		}
	}
}

// TestHeldGateFrom: a held write's gate matches the change from the value
// the reference run had before it; where the field was absent, from any
// value.
func TestHeldGateFrom(t *testing.T) {
	for _, c := range []struct {
		from     string
		wantFrom any
	}{{"1", float64(1)}, {"", nil}} {
		w := FlipWrite{Writer: "trainer", Verb: "patch", Resource: "trainjobs/status", Kind: "TrainJob", Name: "low", Field: "status.jobsStatus[name=node].suspended", From: c.from, To: "0"}
		want := &v1alpha1.GateChange{Field: w.Field, From: c.wantFrom, To: float64(0)}
		if diff := cmp.Diff(want, w.heldGate(FlipGate).Change); diff != "" {
			t.Errorf("from %q: change (-want +got):\n%s", c.from, diff)
		}
	}
}

// flipSteps are the steps of kueueScenarioYAML's flip 7 (TestApplyFlip).
var flipSteps = []string{
	"low runs +expect", "high arrives",
	"explore: kueue's write lands while trainer's is held +expect",
	"explore: trainer's held write goes on +expect",
	"kueue preempts low: its expectations +expect",
}

// TestApplyFlip: the gate holds the first write from the start; the
// expectation that reads what it changes moves after the release; a step
// waits for the second write with the first held, then the release, then
// the second's step's expectations.
func TestApplyFlip(t *testing.T) {
	p, out := appliedFlip(t, 7)
	if diff := cmp.Diff(flipSteps, stepNames(out)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if len(out.Spec.Gates) != 1 {
		t.Fatalf("gates: %+v", out.Spec.Gates)
	}
	g := out.Spec.Gates[0]
	if g.Name != FlipGate || g.Component != "trainer" || g.Resource != "trainjobs/status" || g.ObjectName != "low" || g.Change.Field != "status.jobsStatus[name=node].active" || g.Change.To != float64(1) || g.Change.From != float64(0) {
		t.Errorf("gate: %+v %+v", g, g.Change)
	}
	first := out.Spec.Steps[0].Expect
	if first.Pods == nil || len(first.Objects) != 1 || first.Objects[0].Match["spec"] == nil {
		t.Errorf("step 1 keeps its Pods and the match of spec.suspend, not the jobsStatus: %+v", first)
	}
	wait := out.Spec.Steps[2].Expect
	wantLanded := v1alpha1.Object{"spec": map[string]any{"runtimePatches": []any{map[string]any{"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{}}}}}}}
	if diff := cmp.Diff(wantLanded, wait.Objects[0].Match); diff != "" || len(wait.Held) != 1 || wait.Held[0].Gate != FlipGate || !slices.Equal(wait.Objects[0].Exact, []string{"spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec"}) {
		t.Errorf("wait step: held %+v, exact %v, match (-want +got):\n%s", wait.Held, wait.Objects[0].Exact, diff)
	}
	release := out.Spec.Steps[3].Expect
	if release == nil || len(release.Objects) != 1 || release.Objects[0].Match["status"] == nil || !release.Objects[0].Reached {
		t.Errorf("the release step checks the moved expectation as reached: %+v", release)
	}
	if last := out.Spec.Steps[4].Expect; last.Pods == nil || len(last.Objects) != 0 {
		t.Errorf("the last step has its own expectations: %+v", last)
	}
	lints(t, out)
	// A run that failed before the release did not flip the order; one
	// that failed after it found something.
	failedAt := func(passed ...string) results.Scenario {
		r := results.Scenario{}
		for _, n := range passed {
			r.Steps = append(r.Steps, results.Step{Name: n, Passed: true})
		}
		r.Steps = append(r.Steps, results.Step{Name: "x", Failure: "not true"})
		return r
	}
	if v := Judge(p, nil, nil, failedAt("low runs")); v.Kind != NotCarriedOut {
		t.Errorf("failed while held: %s", v.Kind)
	}
	if v := Judge(p, nil, nil, failedAt("low runs", "high arrives", p.flipWaitStep(), p.lastFlipRelease())); v.Kind != Found {
		t.Errorf("failed after the release: %s", v.Kind)
	}
}

// TestApplyFlipActorWrite: when the second write is an actor's, a step
// before it waits until the first is held (the held component sent it
// reading the state before the actor's write, as in the reference runs),
// and the release follows the actor's step.
func TestApplyFlipActorWrite(t *testing.T) {
	sc := kueueScenario(t)
	changes := preemptionChanges()
	p := Flips(sc, changes, changes)[7]
	p.Until = &FlipWrite{Writer: "sdk", Actor: true, Verb: "create", Resource: "trainjobs", Kind: "TrainJob", Name: "high", Step: 1}
	out := p.Apply(sc)
	want := []string{
		"low runs +expect",
		"explore: trainer's write is held +expect",
		"high arrives",
		"explore: trainer's held write goes on +expect",
		"kueue preempts low +expect",
	}
	if diff := cmp.Diff(want, stepNames(out)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if held := out.Spec.Steps[1].Expect.Held; len(held) != 1 || held[0].Gate != FlipGate {
		t.Errorf("the wait before the actor's write: %+v", held)
	}
	lints(t, out)
	if v := Judge(p, nil, nil, results.Scenario{Steps: []results.Step{{Name: "low runs", Passed: true}, {Name: p.flipHeldStep(), Failure: "not held within 30s"}}}); v.Kind != NotCarriedOut {
		t.Errorf("failed waiting for the held write: %s", v.Kind)
	}
}

// TestJudgeFlipHoldAbandoned: a flip's run in which the API server
// stopped waiting for a request its gate held is not carried out, passed
// or failed; a gate of the scenario's own may time out.
func TestJudgeFlipHoldAbandoned(t *testing.T) {
	p, _ := appliedFlip(t, 7)
	passedAll := results.Scenario{Passed: true}
	for _, n := range []string{"low runs", "high arrives", p.flipWaitStep(), p.lastFlipRelease(), "kueue preempts low: its expectations"} {
		passedAll.Steps = append(passedAll.Steps, results.Step{Name: n, Passed: true})
	}
	found := passedAll
	found.Passed, found.Steps = false, append(slices.Clone(passedAll.Steps[:4]), results.Step{Name: "kueue preempts low: its expectations", Failure: "not true within 1m0s"})
	for _, run := range []results.Scenario{passedAll, found} {
		run.AbandonedHolds = []string{"scenarios-own-gate", FlipGate}
		v := Judge(p, nil, nil, run)
		if v.Kind != NotCarriedOut || v.FailedStep != p.lastFlipRelease() || !strings.Contains(v.Failure, "gate explore-flip held trainer's patch of trainjobs/status low until the API server stopped waiting") {
			t.Errorf("passed %t, the flip's hold abandoned: %+v", run.Passed, v)
		}
	}
	found.AbandonedHolds = []string{"scenarios-own-gate"}
	if v := Judge(p, nil, nil, found); v.Kind != Found {
		t.Errorf("another gate's hold abandoned: %s, want %s", v.Kind, Found)
	}
}

// TestJudgeFlipConflictWithHeld: an actor's write refused with 409
// Conflict because the held write landed since the resourceVersion it
// carried is not carried out (the actor as written does not retry, where
// the manager it stands for would); one that lost to another writer after
// the release is found.
func TestJudgeFlipConflictWithHeld(t *testing.T) {
	p, _ := appliedFlip(t, 7)
	ran := func(changedBy string) results.Scenario {
		r := results.Scenario{}
		for _, n := range []string{"low runs", "high arrives", p.flipWaitStep(), p.lastFlipRelease()} {
			r.Steps = append(r.Steps, results.Step{Name: n, Passed: true})
		}
		r.Steps = append(r.Steps, results.Step{Name: "the second request", Failure: "HTTP 409 Conflict",
			Writes: []results.Write{{Reason: "Conflict", ChangedBy: []string{changedBy}}}})
		return r
	}
	if v := Judge(p, nil, nil, ran(p.Held.who()+"'s "+p.Held.Verb+" of "+p.Held.Resource+" (resourceVersion 7)")); v.Kind != NotCarriedOut {
		t.Errorf("a conflict with the held write: %s", v.Kind)
	}
	if v := Judge(p, nil, nil, ran("jobset's update of jobsets/status (resourceVersion 8)")); v.Kind != Found {
		t.Errorf("a conflict with another write: %s", v.Kind)
	}
}

// TestApplyFlipDropsAnEmptiedStep: a step between the two writes whose
// expectations all read what the held write changes is left with nothing
// to do once they move to the release: it is dropped (a step without a
// write, a release or an expectation does not lint), and a gate that was
// to open after it opens after the release, which checks them.
func TestApplyFlipDropsAnEmptiedStep(t *testing.T) {
	sc := kueueScenario(t)
	// Low's jobsStatus, which the held write changes, in a step of its
	// own.
	first := sc.Spec.Steps[0].Expect
	reported := v1alpha1.Step{Name: "low is reported active", Expect: &v1alpha1.Expect{Objects: first.Objects[:1]}}
	first.Objects = first.Objects[1:]
	sc.Spec.Steps = slices.Insert(sc.Spec.Steps, 1, reported)
	sc.Spec.Gates = append(sc.Spec.Gates, v1alpha1.Gate{Name: "other", Component: "kueue", Resource: "trainjobs", Until: reported.Name})
	changes := preemptionChanges()
	p := Flips(sc, changes, changes)[7]
	out := p.Apply(sc)
	if diff := cmp.Diff(flipSteps, stepNames(out)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if i := slices.IndexFunc(out.Spec.Gates, func(g v1alpha1.Gate) bool { return g.Name == "other" }); i < 0 || out.Spec.Gates[i].Until != p.lastFlipRelease() {
		t.Errorf("the gate until the dropped step: %+v", out.Spec.Gates)
	}
	lints(t, out)
}

// TestApplyFlipAlso: the twin of a flip of the Trainer's status write holds
// the JobSet controller's status write that the Trainer copies later (the
// Job's active count, not the resume before it) too: a second gate, the
// wait step holds both, and each goes on in a release step of its own,
// the Trainer's first, with the expectation of what the Trainer writes
// after its held write (jobsStatus) checked then; a run that failed
// between the two releases did not run the order to its end.
func TestApplyFlipAlso(t *testing.T) {
	p, out := appliedFlip(t, 5)
	if p.Also == nil {
		t.Fatalf("not a twin: %s", p)
	}
	want := []string{
		"low runs +expect", "high arrives",
		"explore: kueue's write lands while trainer's and jobset's are held +expect",
		"explore: trainer's held write goes on",
		"explore: jobset's held write goes on +expect",
		"kueue preempts low: its expectations +expect",
	}
	if diff := cmp.Diff(want, stepNames(out)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if len(out.Spec.Gates) != 2 {
		t.Fatalf("gates: %+v", out.Spec.Gates)
	}
	g := out.Spec.Gates[1]
	if g.Name != FlipAlsoGate || g.Component != "jobset" || g.Verb != "update" || g.Resource != "jobsets/status" || g.ObjectName != "low" || g.Change.Field != "status.replicatedJobsStatus[name=node].active" || g.Change.To != float64(1) {
		t.Errorf("the JobSet's gate: %+v %+v", g, g.Change)
	}
	if held := out.Spec.Steps[2].Expect.Held; len(held) != 2 || held[0].Gate != FlipGate || held[1].Gate != FlipAlsoGate {
		t.Errorf("the wait step holds both: %+v", held)
	}
	if r := out.Spec.Steps[3].Release; r == nil || r.Gate != FlipGate {
		t.Errorf("the Trainer's write goes on first: %+v", out.Spec.Steps[3])
	}
	if r := out.Spec.Steps[4].Release; r == nil || r.Gate != FlipAlsoGate || out.Spec.Steps[4].Expect == nil || len(out.Spec.Steps[4].Expect.Objects) != 1 || out.Spec.Steps[4].Expect.Objects[0].Match["status"] == nil {
		t.Errorf("then the JobSet's, with the jobsStatus expectation: %+v", out.Spec.Steps[4])
	}
	lints(t, out)
	if v := Judge(p, nil, nil, (results.Scenario{Steps: []results.Step{{Name: out.Spec.Steps[3].Name, Passed: true}, {Name: "x", Failure: "not true"}}})); v.Kind != NotCarriedOut {
		t.Errorf("failed between the releases: %s", v.Kind)
	}
}

// appliedFlip returns the i-th flip of the preemption scenario's recorded
// changes and the scenario it runs.
// kueueScenario is kueueScenarioYAML, parsed.
func kueueScenario(t *testing.T) *v1alpha1.Scenario {
	t.Helper()
	var sc v1alpha1.Scenario
	if err := yaml.Unmarshal([]byte(kueueScenarioYAML), &sc); err != nil {
		t.Fatal(err)
	}
	return &sc
}

func appliedFlip(t *testing.T, i int) (Plan, *v1alpha1.Scenario) {
	t.Helper()
	sc := kueueScenario(t)
	changes := preemptionChanges()
	p := Flips(sc, changes, changes)[i]
	return p, p.Apply(sc)
}

// lints checks that a plan's scenario lints as simctl lint does.
func lints(t *testing.T, sc *v1alpha1.Scenario) {
	t.Helper()
	data, err := yaml.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.Load("flip.yaml", data, scenario.Options{}); err != nil {
		t.Errorf("the plan's scenario does not lint: %v\n%s", err, data)
	}
}

func planIDs(plans []Plan) []string {
	var out []string
	for _, p := range plans {
		out = append(out, p.ID())
	}
	return out
}

// TestCoalesces: for a component's write to a TrainJob, the last two
// changes of others to it since its write before (Kueue's suspend and its
// emptying of the entry, before the Trainer reports the job suspended; the
// Trainer's two status patches, before Kueue suspends it); none across the
// component's own write, nor for a component a view of the scenario sees.
func TestCoalesces(t *testing.T) {
	sc := kueueScenario(t)
	changes := append(preemptionChanges(), results.ObjectChange{Step: "kueue preempts low", Writer: "trainer", Verb: "patch", Kind: "TrainJob", Resource: "trainjobs/status", Name: "low",
		Fields: []results.FieldDiff{{Path: "status.conditions[type=Suspended].status", From: `"False"`, To: `"True"`}}})
	var got []string
	for _, p := range Coalesces(sc, changes, changes) {
		got = append(got, p.ID()+": "+p.String())
	}
	want := []string{
		`preemption--coalesce-kueue-step-1-36154b09: kueue sees trainer's patch of trainjobs/status low (status.conditions[type=Suspended].status to "False"), in step 1, and trainer's patch of trainjobs/status low (status.jobsStatus[name=node].active to 1), in step 1, as one change before kueue's update of trainjobs low (spec.suspend to true)`,
		`preemption--coalesce-trainer-step-3-0275a233: trainer sees kueue's update of trainjobs low (spec.suspend to true), in step 3, and kueue's patch of trainjobs low (spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec to {}), in step 3, as one change before trainer's patch of trainjobs/status low (status.conditions[type=Suspended].status to "True")`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("coalesce plans (-want +got):\n%s", diff)
	}
	viewed := *sc
	viewed.Spec.Views = []v1alpha1.View{{Name: "v", Component: "trainer", Resource: "jobsets"}}
	for _, p := range Coalesces(&viewed, changes, changes) {
		if p.Component == "trainer" {
			t.Errorf("a plan for a component a view sees: %s", p)
		}
	}
}

// TestApplyCoalesce: the view holds the component's events of the TrainJob
// from the first change's step; the steps before the second's run as
// written; the second's runs without its expectations, a step waits for
// the second change with the view holding (in the step's place when it
// only waited), a step releases the view, and the step's expectations
// follow, its objects as reached since the step.
func TestApplyCoalesce(t *testing.T) {
	sc := kueueScenario(t)
	p := Coalesces(sc, preemptionChanges(), preemptionChanges())[0] // Kueue sees the Trainer's two patches as one
	out := p.Apply(sc)
	want := []string{
		"low runs",
		"explore: trainer's write lands while kueue has seen neither +expect",
		"explore: kueue sees trainer's two writes as one",
		"low runs: its expectations +expect",
		"high arrives", "kueue preempts low +expect",
	}
	if diff := cmp.Diff(want, stepNames(out)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	wantView := []v1alpha1.View{{Name: CoalesceView, Component: "kueue", Resource: "trainjobs", ObjectName: "low", Coalesce: true, From: "low runs"}}
	if diff := cmp.Diff(wantView, out.Spec.Views); diff != "" {
		t.Errorf("views (-want +got):\n%s", diff)
	}
	if c := out.Spec.Clusters; c == nil || !slices.Equal(c.Only, []string{"envtest"}) {
		t.Errorf("a view runs on envtest only: %+v", c)
	}
	if wait := out.Spec.Steps[1].Expect; len(wait.Held) != 1 || wait.Held[0].View != CoalesceView || len(wait.Objects) != 1 {
		t.Errorf("the wait step: %+v", wait)
	}
	if release := out.Spec.Steps[2]; release.Release == nil || release.Release.View != CoalesceView || release.Expect != nil {
		t.Errorf("the release step: %+v", release)
	}
	if rest := out.Spec.Steps[3].Expect; rest.Pods == nil || len(rest.Objects) != 2 || !rest.Objects[0].Reached || rest.Objects[1].ReachedSince != "low runs" {
		t.Errorf("step 1's expectations follow, its objects as reached since step 1: %+v", rest)
	}
	lints(t, out)

	// The Trainer sees Kueue's two writes of step 3, which only waits: the
	// wait for the second stands in it, the view starting there.
	changes := append(preemptionChanges(), results.ObjectChange{Step: "kueue preempts low", Writer: "trainer", Verb: "patch", Kind: "TrainJob", Resource: "trainjobs/status", Name: "low",
		Fields: []results.FieldDiff{{Path: "status.conditions[type=Suspended].status", From: `"False"`, To: `"True"`}}})
	p = Coalesces(sc, changes, changes)[1]
	out = p.Apply(sc)
	want = []string{
		"low runs +expect", "high arrives",
		"kueue preempts low +expect",
		"explore: trainer sees kueue's two writes as one",
		"kueue preempts low: its expectations +expect",
	}
	if diff := cmp.Diff(want, stepNames(out)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if wait := out.Spec.Steps[2].Expect; len(wait.Held) != 1 || wait.Held[0].View != CoalesceView || len(wait.Objects) != 1 || wait.Objects[0].Match["spec"] == nil {
		t.Errorf("step 3 waits for Kueue's second write, held: %+v", wait)
	}
	if out.Spec.Views[0].From != "kueue preempts low" {
		t.Errorf("the view starts at %q, want step 3", out.Spec.Views[0].From)
	}
	lints(t, out)
	failed := func(before ...string) results.Scenario {
		var steps []results.Step
		for _, name := range before {
			steps = append(steps, results.Step{Name: name, Passed: true})
		}
		return results.Scenario{Steps: append(steps, results.Step{Name: "kueue preempts low: its expectations", Failure: "not true"})}
	}
	if v := Judge(p, nil, nil, failed("low runs")); v.Kind != NotCarriedOut {
		t.Errorf("failed before the release (the component saw neither change): %s, want %s", v.Kind, NotCarriedOut)
	}
	if v := Judge(p, nil, nil, failed("low runs", p.coalesceReleaseStep())); v.Kind != Found {
		t.Errorf("failed after the release: %s, want %s", v.Kind, Found)
	}
}

// TestApplyCoalesceKeepsAHold: a webhook's hold that ends with the second
// change's step is expected holding before it, as written, and not after
// the release, where it has ended.
func TestApplyCoalesceKeepsAHold(t *testing.T) {
	data, err := os.ReadFile("../../scenarios/real-kueue/user-write-between-requests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Load("user-write-between-requests.yaml", data, scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc := f.Scenario
	first := FlipWrite{Writer: "trainer", Verb: "patch", Kind: "TrainJob", Resource: "trainjobs/status", Name: "llm", Step: 1, Field: "status.conditions[type=Suspended].status", To: `"True"`}
	second := FlipWrite{Writer: "user", Actor: true, Verb: "patch", Kind: "TrainJob", Resource: "trainjobs", Name: "llm", Step: 2, Field: "metadata.labels.team", To: `"a"`}
	held := FlipWrite{Writer: "kueue", Verb: "update", Kind: "TrainJob", Resource: "trainjobs", Name: "llm", Step: 3, Field: "spec.suspend", To: "false"}
	p := Plan{Scenario: sc.Metadata.Name, Kind: Coalesce, Component: "kueue", Step: 1, StepName: sc.Spec.Steps[1].Name, Held: &held, Coalesced: []*FlipWrite{&first, &second}}
	out := p.Apply(sc)
	for _, st := range out.Spec.Steps {
		if st.Expect == nil || st.Expect.Holding == "" {
			continue
		}
		if st.Name != sc.Spec.Steps[1].Name {
			t.Errorf("step %q expects the hold, which ended before it", st.Name)
		}
	}
	if e := out.Spec.Steps[1].Expect; e == nil || e.Holding != "platform-policy" {
		t.Errorf("the first change's step runs as written, the webhook holding: %+v", e)
	}
	lints(t, out)
}

// TestIntermediates: a plan for each write of a component that follows
// another of its own, in that order in both reference runs, by component
// (Kueue first); none for a component a view or a gate of the scenario
// names, nor for an order the other run did not show.
func TestIntermediates(t *testing.T) {
	sc := kueueScenario(t)
	changes := preemptionChanges()
	components := []string{"kueue", "trainer", "jobset", "kube-scheduler"}
	var got []string
	for _, p := range Intermediates(sc, changes, changes, components) {
		got = append(got, p.ID()+": "+p.String())
	}
	want := []string{
		"preemption--intermediate-kueue-step-3-158f77c2: kueue crashes after kueue's patch of trainjobs low (spec.suspend to false), in step 1, with its next write, kueue's update of trainjobs low (spec.suspend to true), held",
		"preemption--intermediate-kueue-step-3-a5fe5073: kueue crashes after kueue's update of trainjobs low (spec.suspend to true), in step 3, with its next write, kueue's patch of trainjobs low (spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec to {}), held",
		"preemption--intermediate-trainer-step-1-a5976d79: trainer crashes after trainer's patch of trainjobs/status low (status.conditions[type=Suspended].status to \"False\"), in step 1, with its next write, trainer's patch of trainjobs/status low (status.jobsStatus[name=node].active to 1), held",
		"preemption--intermediate-jobset-step-1-f7bfe5c7: jobset crashes after jobset's update of jobsets/status low (status.replicatedJobsStatus[name=node].suspended to 0), in step 1, with its next write, jobset's update of jobsets/status low (status.replicatedJobsStatus[name=node].active to 1), held",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("intermediates (-want +got):\n%s", diff)
	}
	// The other run had Kueue clear the entry before it suspended the
	// job: the runs disagree on that order, which gives no plan.
	other := slices.Clone(changes)
	other[6], other[7] = other[7], other[6]
	for _, p := range Intermediates(sc, changes, other, components) {
		if p.Component == "kueue" && p.Held.Field != "spec.suspend" {
			t.Errorf("a plan of an order the runs disagree on: %s", p)
		}
	}
	// A webhook's hold of unsuspends holds Kueue's suspend writes: the
	// crash would cut what the scenario's steps wait on.
	held := kueueScenario(t)
	held.Spec.Webhooks = []v1alpha1.AdmissionWebhook{{Name: "policy", Hold: &v1alpha1.WebhookHold{Requests: v1alpha1.HoldUnsuspend}}}
	for _, p := range Intermediates(held, changes, changes, components) {
		if p.Component == "kueue" && p.Held.Field == "spec.suspend" {
			t.Errorf("a plan whose held write a webhook's hold holds: %s", p)
		}
	}
	viewed := kueueScenario(t)
	viewed.Spec.Views = []v1alpha1.View{{Name: "v", Component: "trainer", Resource: "trainjobs"}}
	viewed.Spec.Gates = []v1alpha1.Gate{{Name: "g", Component: "jobset", Resource: "jobsets/status"}}
	for _, p := range Intermediates(viewed, changes, changes, components) {
		if p.Component != "kueue" {
			t.Errorf("a plan for a component the scenario's views or gates name: %s", p)
		}
	}
}

// TestApplyIntermediate: the gate holds the component's next write from
// the start and opens after the crash; the held write's step runs without
// its expectations, then the wait until it is held, the crash, the start,
// and the expectations; a step that only waited keeps its name and comes
// after the start. The plan runs on envtest and lints.
func TestApplyIntermediate(t *testing.T) {
	sc := kueueScenario(t)
	changes := preemptionChanges()
	plans := Intermediates(sc, changes, changes, []string{"kueue", "trainer"})
	cases := []struct {
		plan Plan
		want []string
	}{
		{plans[2], []string{
			"low runs",
			"explore: trainer's write after its patch of trainjobs/status is held +expect",
			"explore: trainer crashes with its write held",
			"explore: trainer starts again",
			"low runs: its expectations +expect",
			"high arrives", "kueue preempts low +expect",
		}},
		{plans[0], []string{
			"low runs +expect", "high arrives",
			"explore: kueue's write after its patch of trainjobs is held +expect",
			"explore: kueue crashes with its write held",
			"explore: kueue starts again",
			"kueue preempts low +expect",
		}},
	}
	for _, c := range cases {
		out := c.plan.Apply(sc)
		if diff := cmp.Diff(c.want, stepNames(out)); diff != "" {
			t.Errorf("%s: steps (-want +got):\n%s", c.plan.ID(), diff)
		}
		want := []v1alpha1.Gate{{Name: IntermediateGate, Component: c.plan.Component, Verb: c.plan.Held.Verb, Resource: c.plan.Held.Resource, ObjectName: "low",
			Change: &v1alpha1.GateChange{Field: c.plan.Held.Field, From: decode(c.plan.Held.From), To: decode(c.plan.Held.To)}, Until: "explore: " + c.plan.Component + " crashes with its write held"}}
		if diff := cmp.Diff(want, out.Spec.Gates); diff != "" {
			t.Errorf("%s: gates (-want +got):\n%s", c.plan.ID(), diff)
		}
		if c := out.Spec.Clusters; c == nil || !slices.Equal(c.Only, []string{"envtest"}) {
			t.Errorf("the plan runs on %v, want envtest only", c)
		}
		lints(t, out)
	}
}
