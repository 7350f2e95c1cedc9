package minimize

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// The tests judge candidates by a rule over the candidate instead of a run,
// to check the search itself: what it removes, what it keeps, how many runs
// it takes. simctl minimize's runs on a cluster are sim/e2e's.

func write(name, actor string) v1alpha1.Step {
	return v1alpha1.Step{Name: name, Actor: actor, Patch: &v1alpha1.Patch{Type: v1alpha1.PatchMerge, Target: v1alpha1.Target{Kind: "TrainJob", Name: "llm"}, Body: map[string]any{"metadata": map[string]any{"labels": map[string]any{name: "x"}}}}}
}

func expect(name string) v1alpha1.Step {
	return v1alpha1.Step{Name: name, Expect: &v1alpha1.Expect{}}
}

func refusal(name, actor string) v1alpha1.Step {
	st := write(name, actor)
	st.ExpectError = &v1alpha1.ExpectError{Status: 409}
	return st
}

func padded() *v1alpha1.Scenario {
	return &v1alpha1.Scenario{
		APIVersion: "sim.trainersim.dev/v1alpha1",
		Kind:       "Scenario",
		Metadata:   v1alpha1.Metadata{Name: "padded"},
		Spec: v1alpha1.ScenarioSpec{
			Actors: []v1alpha1.Actor{{Name: "sdk", FieldManager: "sdk"}, {Name: "noise", FieldManager: "noise"}, {Name: "kueue", FieldManager: "kueue"}},
			Nodes:  []v1alpha1.NodeGroup{{Name: "gpu", Profile: "nvidia-h100-80gb", Count: 4}, {Name: "cpu", Profile: "cpu", Count: 1}},
			Steps: []v1alpha1.Step{
				{Name: "create", Actor: "sdk", Create: v1alpha1.Object{
					"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
					"metadata": map[string]any{"name": "llm", "labels": map[string]any{"a": "1", "b": "2", "c": "3"}},
					"spec":     map[string]any{"runtimeRef": map[string]any{"name": "torch"}, "suspend": true, "trainer": map[string]any{"numNodes": 2}},
				}},
				write("noise-1", "noise"),
				expect("wait before noise-2"),
				write("noise-2", "noise"),
				write("kueue-entry", "kueue"),
				write("noise-3", "noise"),
				refusal("refused", "noise"),
				write("noise-4", "noise"),
				expect("the ending"),
				expect("the ending, too"),
			},
		},
	}
}

func names(sc *v1alpha1.Scenario) []string {
	var out []string
	for _, st := range sc.Spec.Steps {
		out = append(out, st.Name)
	}
	return out
}

func has(sc *v1alpha1.Scenario, step string) bool {
	return slices.Contains(names(sc), step)
}

// rule judges a candidate: it passes when keep says so, else it fails at
// the ending.
func rule(keep func(sc *v1alpha1.Scenario) bool, runs *[]string) Test {
	return func(_ context.Context, cands []*v1alpha1.Scenario) ([]Outcome, error) {
		var out []Outcome
		for _, c := range cands {
			k := key(c)
			*runs = append(*runs, string(k[:]))
			if keep(c) {
				out = append(out, Outcome{Passed: true})
			} else {
				out = append(out, Outcome{Step: "the ending", Failure: "entries mismatch"})
			}
		}
		return out, nil
	}
}

// needs is the rule of a scenario that ends as it does because of its
// create and Kueue's entry.
func needs(sc *v1alpha1.Scenario) bool {
	return has(sc, "create") && has(sc, "kueue-entry")
}

func TestMinimizeSteps(t *testing.T) {
	var runs []string
	res, err := Minimize(context.Background(), padded(), rule(needs, &runs), Options{NoFields: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"create", "kueue-entry", "refused", "the ending", "the ending, too"}
	if diff := cmp.Diff(want, names(res.Scenario)); diff != "" {
		t.Errorf("steps mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sdk", "noise", "kueue"}, actorNames(res.Scenario)); diff != "" {
		t.Errorf("actors mismatch (-want +got): the refused write's actor stays:\n%s", diff)
	}
	if res.Want != (Outcome{Passed: true}) || res.Stopped != "" {
		t.Errorf("want the original's outcome passed and the search done, got %+v, stopped %q", res.Want, res.Stopped)
	}
	if res.Runs != len(runs) {
		t.Errorf("Runs = %d, the test ran %d", res.Runs, len(runs))
	}
	slices.Sort(runs)
	if len(slices.Compact(runs)) != len(runs) {
		t.Errorf("a candidate ran twice: the cache must judge it")
	}
	if res.Before.Steps != 10 || res.After.Steps != 5 {
		t.Errorf("sizes: before %+v, after %+v", res.Before, res.After)
	}
}

func TestMinimizeKeepsNamedAndDropsRefusals(t *testing.T) {
	var runs []string
	res, err := Minimize(context.Background(), padded(), rule(needs, &runs), Options{NoFields: true, DropRefusals: true, Keep: []string{"wait before noise-2"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"create", "wait before noise-2", "noise-2", "kueue-entry", "the ending", "the ending, too"}
	if diff := cmp.Diff(want, names(res.Scenario)); diff != "" {
		t.Errorf("steps mismatch (-want +got): a kept wait keeps its write, the refusal goes:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sdk", "noise", "kueue"}, actorNames(res.Scenario)); diff != "" {
		t.Errorf("actors mismatch (-want +got):\n%s", diff)
	}
}

func TestMinimizeAWaitGoesWithItsWrite(t *testing.T) {
	var runs []string
	// The wait is needed only while noise-2 is there; noise-2 is not.
	res, err := Minimize(context.Background(), padded(), rule(func(sc *v1alpha1.Scenario) bool {
		return needs(sc) && (!has(sc, "noise-2") || has(sc, "wait before noise-2"))
	}, &runs), Options{NoFields: true, DropRefusals: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"create", "kueue-entry", "the ending", "the ending, too"}, names(res.Scenario)); diff != "" {
		t.Errorf("steps mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sdk", "kueue"}, actorNames(res.Scenario)); diff != "" {
		t.Errorf("actors mismatch (-want +got): an actor no step names goes:\n%s", diff)
	}
}

// TestMinimizeReachedSinceFollowsKeptSteps: a wait whose states count
// since a write the search drops (an import's reachedSince) counts them
// since the kept step before it, and the candidate lints and runs.
func TestMinimizeReachedSinceFollowsKeptSteps(t *testing.T) {
	sc := padded()
	for i, st := range sc.Spec.Steps {
		if st.Name == "the ending" {
			sc.Spec.Steps[i].Expect.Objects = []v1alpha1.ObjectExpectation{{
				Target: v1alpha1.Target{Kind: "TrainJob", Name: "llm"}, Match: v1alpha1.Object{"status": map[string]any{}},
				Reached: true, ReachedSince: "noise-3",
			}}
		}
	}
	var runs []string
	res, err := Minimize(context.Background(), sc, rule(needs, &runs), Options{NoFields: true})
	if err != nil {
		t.Fatal(err)
	}
	if has(res.Scenario, "noise-3") {
		t.Fatalf("noise-3 kept: %v", names(res.Scenario))
	}
	for _, st := range res.Scenario.Spec.Steps {
		if st.Name == "the ending" {
			if got := st.Expect.Objects[0].ReachedSince; got != "kueue-entry" {
				t.Errorf("reachedSince %q, want kueue-entry, the kept step before the dropped noise-3", got)
			}
		}
	}
}

func TestMinimizeAFailingScenario(t *testing.T) {
	var runs []string
	// It fails at noise-3 while kueue-entry is there.
	test := func(_ context.Context, cands []*v1alpha1.Scenario) ([]Outcome, error) {
		var out []Outcome
		for _, c := range cands {
			runs = append(runs, "")
			if has(c, "kueue-entry") && has(c, "noise-3") {
				out = append(out, Outcome{Step: "noise-3", Failure: "refused: 409"})
			} else {
				out = append(out, Outcome{Passed: true})
			}
		}
		return out, nil
	}
	res, err := Minimize(context.Background(), padded(), test, Options{NoFields: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kueue-entry", "noise-3"}, names(res.Scenario)); diff != "" {
		t.Errorf("steps mismatch (-want +got): the steps after the failing one never ran:\n%s", diff)
	}
	if res.Want.Passed || res.Want.Step != "noise-3" {
		t.Errorf("want the original failing at noise-3, got %+v", res.Want)
	}
}

func TestMinimizeNodes(t *testing.T) {
	var runs []string
	res, err := Minimize(context.Background(), padded(), rule(func(sc *v1alpha1.Scenario) bool {
		gpus := 0
		for _, g := range sc.Spec.Nodes {
			if g.Name == "gpu" {
				gpus = g.Count
			}
		}
		return needs(sc) && gpus >= 2
	}, &runs), Options{NoFields: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.NodeGroup{{Name: "gpu", Profile: "nvidia-h100-80gb", Count: 2}}
	if diff := cmp.Diff(want, res.Scenario.Spec.Nodes); diff != "" {
		t.Errorf("nodes mismatch (-want +got):\n%s", diff)
	}
	if res.After.Nodes != 2 || res.Before.Nodes != 5 {
		t.Errorf("sizes: before %+v, after %+v", res.Before, res.After)
	}
}

func TestMinimizeFields(t *testing.T) {
	var runs []string
	res, err := Minimize(context.Background(), padded(), rule(func(sc *v1alpha1.Scenario) bool {
		i := slices.Index(names(sc), "create")
		if !needs(sc) || i < 0 {
			return false
		}
		create := map[string]any(sc.Spec.Steps[i].Create)
		return at(create, []any{"metadata", "labels", "b"}) == "2" && at(create, []any{"spec", "trainer", "numNodes"}) != nil
	}, &runs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.Object{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": map[string]any{"name": "llm", "labels": map[string]any{"b": "2"}},
		"spec":     map[string]any{"trainer": map[string]any{"numNodes": float64(2)}},
	}
	if diff := cmp.Diff(want, res.Scenario.Spec.Steps[0].Create); diff != "" {
		t.Errorf("create mismatch (-want +got):\n%s", diff)
	}
	// Kueue's patch body, not needed, is emptied; its write stays.
	if diff := cmp.Diff(map[string]any{}, res.Scenario.Spec.Steps[1].Patch.Body); diff != "" {
		t.Errorf("kueue-entry's body mismatch (-want +got):\n%s", diff)
	}
	if res.FieldsRemoved == 0 {
		t.Error("FieldsRemoved = 0")
	}
}

func TestMinimizeStopsAtMaxRunsWithWhatItFound(t *testing.T) {
	var runs []string
	res, err := Minimize(context.Background(), padded(), rule(needs, &runs), Options{MaxRuns: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped == "" || len(runs) > 3 {
		t.Errorf("want a stop at 3 runs, got stopped %q after %d runs", res.Stopped, len(runs))
	}
	if !needs(res.Scenario) {
		t.Errorf("the result no longer ends the same way: %v", names(res.Scenario))
	}
}

// A batch larger than the runs left runs as many as are left: with batches
// of 12 (explore's --parallel) and 4 runs, the first run and 3 candidates
// run, not the first alone.
func TestMinimizeRunsWhatIsLeftOfABatch(t *testing.T) {
	var runs []string
	res, err := Minimize(context.Background(), padded(), rule(needs, &runs), Options{MaxRuns: 4, Batch: 12})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 4 || len(runs) != 4 || res.Stopped == "" {
		t.Errorf("want 4 runs and a stop, got %d runs (the test saw %d), stopped %q", res.Runs, len(runs), res.Stopped)
	}
	if !needs(res.Scenario) {
		t.Errorf("the result no longer ends the same way: %v", names(res.Scenario))
	}
}

func TestMinimizeBatchesTakeTheFirstInOrder(t *testing.T) {
	var one, three []string
	a, err := Minimize(context.Background(), padded(), rule(needs, &one), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Minimize(context.Background(), padded(), rule(needs, &three), Options{Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.Scenario, b.Scenario); diff != "" {
		t.Errorf("batches of 3 found another scenario (-batch 1 +batch 3):\n%s", diff)
	}
}

func TestMinimizeInvalidCandidatesAreNotRun(t *testing.T) {
	var runs []string
	valid := func(sc *v1alpha1.Scenario) error {
		if has(sc, "noise-4") && !has(sc, "noise-1") {
			return errors.New("noise-4 reads noise-1's answer")
		}
		return nil
	}
	res, err := Minimize(context.Background(), padded(), rule(func(sc *v1alpha1.Scenario) bool {
		if valid(sc) != nil {
			t.Errorf("an invalid candidate ran: %v", names(sc))
		}
		return needs(sc)
	}, &runs), Options{NoFields: true, Valid: valid})
	if err != nil {
		t.Fatal(err)
	}
	if res.Invalid == 0 {
		t.Error("Invalid = 0: no candidate was refused")
	}
	if has(res.Scenario, "noise-4") {
		t.Errorf("noise-4 stayed: %v", names(res.Scenario))
	}
}

func TestMinimizeStopsOnTestError(t *testing.T) {
	calls := 0
	test := func(_ context.Context, cands []*v1alpha1.Scenario) ([]Outcome, error) {
		calls++
		if calls > 2 {
			return nil, errors.New("the cluster stopped")
		}
		out := make([]Outcome, len(cands))
		for i := range out {
			out[i] = Outcome{Passed: needs(cands[i])}
		}
		return out, nil
	}
	res, err := Minimize(context.Background(), padded(), test, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "the cluster stopped" || !needs(res.Scenario) {
		t.Errorf("want the search stopped with what it found, got %q and %v", res.Stopped, names(res.Scenario))
	}
}

func actorNames(sc *v1alpha1.Scenario) []string {
	var out []string
	for _, a := range sc.Spec.Actors {
		out = append(out, a.Name)
	}
	return out
}
