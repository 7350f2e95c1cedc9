package runner

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/scenario"
)

// TestOrderOfIsPinned pins the orders of a few seeds: a seed printed by an
// old CI run must replay the same order with a newer simctl.
func TestOrderOfIsPinned(t *testing.T) {
	got := map[uint64][]int{}
	for seed := uint64(0); seed < 4; seed++ {
		got[seed] = OrderOf(seed, 4)
	}
	want := map[uint64][]int{
		0: {2, 1, 0, 3},
		1: {2, 0, 3, 1},
		2: {0, 1, 3, 2},
		3: {2, 3, 0, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OrderOf mismatch (-want +got):\n%s", diff)
	}
}

func TestOrderOfIsAPermutation(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		for n := 0; n <= 6; n++ {
			order := OrderOf(seed, n)
			sorted := slices.Sorted(slices.Values(order))
			for i, v := range sorted {
				if v != i {
					t.Fatalf("OrderOf(%d, %d) = %v: not a permutation", seed, n, order)
				}
			}
			if again := OrderOf(seed, n); !slices.Equal(order, again) {
				t.Fatalf("OrderOf(%d, %d) gave %v, then %v", seed, n, order, again)
			}
		}
	}
}

func TestExploredOrders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		il     v1alpha1.Interleavings
		writes int
		want   int
	}{
		{name: "all orders of 3", il: v1alpha1.Interleavings{Orders: v1alpha1.Orders{All: true}, Seed: 1}, writes: 3, want: 6},
		{name: "all orders of 5", il: v1alpha1.Interleavings{Orders: v1alpha1.Orders{All: true}, Seed: 42}, writes: 5, want: 120},
		{name: "4 of 24", il: v1alpha1.Interleavings{Orders: v1alpha1.Orders{N: 4}, Seed: 7}, writes: 4, want: 4},
		{name: "more than there are", il: v1alpha1.Interleavings{Orders: v1alpha1.Orders{N: 10}}, writes: 2, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ExploredOrders(&tc.il, tc.writes)
			if len(got) != tc.want {
				t.Fatalf("got %d orders, want %d", len(got), tc.want)
			}
			if got[0].Seed != tc.il.Seed {
				t.Errorf("first seed %d, want %d: exploring starts at the given seed", got[0].Seed, tc.il.Seed)
			}
			seen := map[string]bool{}
			for _, o := range got {
				key := fmt.Sprint(o.Order)
				if seen[key] {
					t.Errorf("order %v explored twice", o.Order)
				}
				seen[key] = true
				if replay := OrderOf(o.Seed, tc.writes); !slices.Equal(replay, o.Order) {
					t.Errorf("seed %d replays %v, but %v was explored", o.Seed, replay, o.Order)
				}
			}
			if again := ExploredOrders(&tc.il, tc.writes); !cmp.Equal(got, again) {
				t.Errorf("a second exploration differs:\n%s", cmp.Diff(got, again))
			}
		})
	}
}

func TestPlans(t *testing.T) {
	group := func(n int) *v1alpha1.Scenario {
		c := &v1alpha1.Concurrently{Interleavings: &v1alpha1.Interleavings{Orders: v1alpha1.Orders{All: true}, Seed: 3}}
		for i := range n {
			c.Writes = append(c.Writes, v1alpha1.Step{Name: fmt.Sprintf("w%d", i)})
		}
		return &v1alpha1.Scenario{Metadata: v1alpha1.Metadata{Name: "explored"}, Spec: v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{{Name: "first"}, {Name: "group", Concurrently: c}}}}
	}
	plain := &scenario.File{Path: "plain.yaml", Scenario: &v1alpha1.Scenario{Metadata: v1alpha1.Metadata{Name: "plain"}, Spec: v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{{Name: "only"}}}}}
	explored := &scenario.File{Path: "explored.yaml", Scenario: group(3)}

	plans := Plans([]*scenario.File{plain, explored}, nil)
	if len(plans) != 7 {
		t.Fatalf("got %d plans, want 1 + 6", len(plans))
	}
	if plans[0].Interleaving != nil {
		t.Errorf("a scenario without interleavings got order %v", plans[0].Interleaving.Names)
	}
	if got := plans[0].Name(); got != "plain" {
		t.Errorf("plain run named %q, want the scenario's name", got)
	}
	il := plans[1].Interleaving
	if got, want := plans[1].Name(), fmt.Sprintf("explored [order %s > %s > %s, seed %d]", il.Names[0], il.Names[1], il.Names[2], il.Seed); got != want {
		t.Errorf("explored run named %q, want %q", got, want)
	}
	for i, p := range plans[1:] {
		il := p.Interleaving
		if il.Step != "group" || il.Index != i+1 || il.Of != 6 || len(il.Names) != 3 {
			t.Errorf("plan %d: step %q, %d of %d, names %v", i+1, il.Step, il.Index, il.Of, il.Names)
		}
		for k, w := range il.Order {
			if il.Names[k] != fmt.Sprintf("w%d", w) {
				t.Errorf("plan %d: names %v do not follow order %v", i+1, il.Names, il.Order)
			}
		}
	}

	seed := plans[4].Interleaving.Seed
	replay := Plans([]*scenario.File{plain, explored}, &seed)
	if len(replay) != 2 {
		t.Fatalf("with a seed: %d plans, want 2", len(replay))
	}
	if diff := cmp.Diff(plans[4].Interleaving.Names, replay[1].Interleaving.Names); diff != "" {
		t.Errorf("seed %d replays another order (-explored +replayed):\n%s", seed, diff)
	}
}

func TestInterleavingMatches(t *testing.T) {
	il := &Interleaving{Names: []string{"b", "c", "a"}}
	for _, tc := range []struct {
		c    v1alpha1.InterleavingCase
		want bool
	}{
		{v1alpha1.InterleavingCase{First: "b"}, true},
		{v1alpha1.InterleavingCase{First: "a"}, false},
		{v1alpha1.InterleavingCase{Order: []string{"b", "a"}}, true},
		{v1alpha1.InterleavingCase{Order: []string{"a", "b"}}, false},
		{v1alpha1.InterleavingCase{Order: []string{"b", "c", "a"}}, true},
		{v1alpha1.InterleavingCase{First: "b", Order: []string{"a", "c"}}, false},
		{v1alpha1.InterleavingCase{First: "b", Order: []string{"c", "a"}}, true},
	} {
		if got := il.matches(&tc.c); got != tc.want {
			t.Errorf("order %v, case first=%q order=%v: matches %v, want %v", il.Names, tc.c.First, tc.c.Order, got, tc.want)
		}
	}
}

// TestStartOrder checks that scenarios whose gates keep others off a
// component start first, then those waiting on the cluster's timers (a node
// taken unreachable, other node steps, then Pods' lifecycles and crash-loop
// back-offs), and that the others keep their order.
func TestStartOrder(t *testing.T) {
	plan := func(name string, sc func(*v1alpha1.ScenarioSpec)) Plan {
		s := &v1alpha1.Scenario{Metadata: v1alpha1.Metadata{Name: name}}
		sc(&s.Spec)
		return Plan{File: &scenario.File{Scenario: s}}
	}
	none := func(*v1alpha1.ScenarioSpec) {}
	plans := []Plan{
		plan("a", none),
		plan("l", func(s *v1alpha1.ScenarioSpec) { s.Lifecycle = []v1alpha1.PodLifecycle{{}} }),
		plan("b", func(s *v1alpha1.ScenarioSpec) {
			s.Steps = []v1alpha1.Step{{Name: "drain", Node: &v1alpha1.NodeAction{Name: "cpu-0", Action: v1alpha1.NodeDrain}}}
		}),
		plan("c", none),
		plan("d", func(s *v1alpha1.ScenarioSpec) { s.Lifecycle = []v1alpha1.PodLifecycle{{}} }),
		plan("e", none),
		plan("g", func(s *v1alpha1.ScenarioSpec) { s.Gates = []v1alpha1.Gate{{Component: "jobset"}} }),
		plan("h", func(s *v1alpha1.ScenarioSpec) { s.Gates = []v1alpha1.Gate{{Actor: "sdk"}} }),
		plan("k", func(s *v1alpha1.ScenarioSpec) { s.CrashLoopBackOff = &v1alpha1.CrashLoopBackOff{} }),
		plan("u", func(s *v1alpha1.ScenarioSpec) {
			s.Steps = []v1alpha1.Step{
				{Name: "drain", Node: &v1alpha1.NodeAction{Name: "cpu-0", Action: v1alpha1.NodeDrain}},
				{Name: "unreachable", Node: &v1alpha1.NodeAction{Name: "cpu-1", Action: v1alpha1.NodeUnreachable}},
			}
		}),
	}
	var got []string
	for _, i := range startOrder(plans, nil) {
		got = append(got, plans[i].Name())
	}
	if diff := cmp.Diff([]string{"g", "u", "b", "l", "d", "k", "a", "c", "e", "h"}, got); diff != "" {
		t.Errorf("start order mismatch (-want +got):\n%s", diff)
	}
}

// TestTrainerHolds: a range leaves out the releases outside it, a
// pseudo-version (a checkout's) counts as what it is, after its release,
// and nothing is left out for a version that is not a release's.
func TestTrainerHolds(t *testing.T) {
	old := &v1alpha1.Trainer{Versions: "<v2.2.0"}
	newer := &v1alpha1.Trainer{Versions: ">=v2.2.0"}
	pinned := &v1alpha1.Trainer{Versions: "=v2.2.0 || =v2.2.1"}
	for _, tc := range []struct {
		r       *v1alpha1.Trainer
		version string
		want    bool
	}{
		{old, "v2.1.0", true},
		{old, "v2.2.0", false},
		{old, "unknown", true},
		{old, "v2.3.1-0.20260101000000-abcdef", false},
		{newer, "v2.3.1-0.20260101000000-abcdef", true},
		{pinned, "v2.2.1", true},
		{pinned, "v2.2.2-0.20260101000000-abcdef", false},
		{pinned, "v2.2.1-0.20260101000000-abcdef", false},
	} {
		if got := TrainerHolds(tc.r, tc.version); got != tc.want {
			t.Errorf("TrainerHolds(%s, %s) = %v, want %v", tc.r.Versions, tc.version, got, tc.want)
		}
	}
	if !TrainerHolds(nil, "v2.1.0") {
		t.Error("a scenario without a range was left out")
	}
}

// TestBehaviourChange: a failed scenario on a Trainer checkout is a
// behaviour change against the release it descends from when that release
// is one trainersim runs and the checkout runs the same steps; not on a
// release, nor when a range holds for the checkout and not for its
// release. On a Kueue checkout, a scenario that uses Kueue is one.
func TestBehaviourChange(t *testing.T) {
	checkout := cluster.Versions{Trainer: "v2.3.1-0.20260821142538-8c0f5059bd51", TrainerBase: "v2.3.0"}
	scenario := func(scenario string, steps ...string) *v1alpha1.Scenario {
		sc := &v1alpha1.Scenario{}
		if scenario != "" {
			sc.Spec.Trainer = &v1alpha1.Trainer{Versions: scenario}
		}
		for _, r := range steps {
			sc.Spec.Steps = append(sc.Spec.Steps, v1alpha1.Step{Trainer: &v1alpha1.Trainer{Versions: r}})
		}
		return sc
	}
	kueue := cluster.Versions{Trainer: "v2.3.0", Kueue: "v0.19.2-0.checkout", KueueBase: "v0.19.1"}
	both := checkout
	both.Kueue, both.KueueBase = kueue.Kueue, kueue.KueueBase
	usesKueue := scenario("")
	usesKueue.Spec.Components = []string{"kueue"}
	for _, tc := range []struct {
		name string
		sc   *v1alpha1.Scenario
		v    cluster.Versions
		want string
	}{
		{"no ranges", scenario(""), checkout, "the Trainer checkout against v2.3.0"},
		{"same steps", scenario(">=v2.2.0", "<v2.3.0", ">=v2.3.0"), checkout, "the Trainer checkout against v2.3.0"},
		{"a step only the checkout runs", scenario("", ">v2.3.0"), checkout, ""},
		{"a release", scenario(""), cluster.Versions{Trainer: "v2.3.0"}, ""},
		{"a release trainersim does not run", scenario(""), cluster.Versions{Trainer: "v2.9.1-0.checkout", TrainerBase: "v2.9.0"}, ""},
		{"kueue checkout, no kueue", scenario(""), kueue, ""},
		{"kueue checkout", usesKueue, kueue, "the Kueue checkout against v0.19.1"},
		{"both", usesKueue, both, "the Trainer and Kueue checkouts against v2.3.0 and v0.19.1"},
	} {
		if got := behaviourChange(tc.sc, tc.v); got != tc.want {
			t.Errorf("%s: behaviourChange = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestStartOrderByDurations: with an earlier run's durations the longest
// start first, a file's runs sharing its time; a file the earlier run did
// not have is estimated by its timers; a run that keeps others off a
// component still starts before all.
func TestStartOrderByDurations(t *testing.T) {
	plan := func(path string, sc func(*v1alpha1.ScenarioSpec)) Plan {
		s := &v1alpha1.Scenario{Metadata: v1alpha1.Metadata{Name: path}}
		sc(&s.Spec)
		return Plan{File: &scenario.File{Path: path, Scenario: s}}
	}
	none := func(*v1alpha1.ScenarioSpec) {}
	unreachable := func(s *v1alpha1.ScenarioSpec) {
		s.Steps = []v1alpha1.Step{{Name: "gone", Node: &v1alpha1.NodeAction{Name: "cpu-0", Action: v1alpha1.NodeUnreachable}}}
	}
	plans := []Plan{
		plan("short.yaml", none),
		plan("two-runs.yaml", none), plan("two-runs.yaml", none),
		plan("new.yaml", unreachable),
		plan("gated.yaml", func(s *v1alpha1.ScenarioSpec) { s.Gates = []v1alpha1.Gate{{Component: "jobset"}} }),
		plan("long.yaml", none),
	}
	durations := Durations{"short.yaml": 2 * time.Second, "two-runs.yaml": 40 * time.Second, "long.yaml": 25 * time.Second, "gated.yaml": time.Second}
	var got []string
	for _, i := range startOrder(plans, durations) {
		got = append(got, plans[i].File.Path)
	}
	want := []string{"gated.yaml", "new.yaml", "long.yaml", "two-runs.yaml", "two-runs.yaml", "short.yaml"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("start order mismatch (-want +got):\n%s", diff)
	}
}
