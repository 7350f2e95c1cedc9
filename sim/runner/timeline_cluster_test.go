package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/scenario"
)

// TestTimelineOnACluster runs the README's example scenario on a real
// cluster and checks that its timeline holds the writes, what the server
// changed in them, and the reactions the watches observed, in order and
// within the scenario's time.
func TestTimelineOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	files, err := scenario.LoadPaths([]string{"../../scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml"}, scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sim.DefaultStartTimeout+2*time.Minute)
	defer cancel()
	env := &sim.Environment{}
	if err := env.Start(ctx); err != nil {
		t.Fatalf("failed to start the cluster: %v", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Errorf("failed to stop the cluster: %v", err)
		}
	}()
	res := (&Runner{Env: env}).RunScenario(ctx, files[0])
	if !res.Passed {
		t.Fatalf("scenario failed: %s", res.Failure)
	}
	tl := res.Timeline
	if tl == nil {
		t.Fatal("scenario has no timeline")
	}
	wantLanes := []string{"sdk", "kueue", "policy", "trainer", "jobset", "job-controller", "scheduler", "kwok"}
	if diff := cmp.Diff(wantLanes, tl.Lanes); diff != "" {
		t.Errorf("lanes mismatch (-want +got):\n%s", diff)
	}
	if tl.Truncated || len(tl.Problems) > 0 {
		t.Errorf("timeline truncated=%t problems=%v, want neither", tl.Truncated, tl.Problems)
	}

	kinds := map[string]int{}
	end := res.Started.Add(res.Duration)
	for i, e := range tl.Entries {
		kinds[e.Kind]++
		if e.At.Before(res.Started) || e.At.After(end) {
			t.Errorf("entry %d (%s) at %s is outside the scenario [%s, %s]", i, e.Summary, e.At, res.Started, end)
		}
		if i > 0 && e.At.Before(tl.Entries[i-1].At) {
			t.Errorf("entry %d (%s) is before the entry preceding it", i, e.Summary)
		}
		if !slices.Contains(tl.Lanes, e.Lane) {
			t.Errorf("entry %d (%s) is on lane %q, which is not in the lanes", i, e.Summary, e.Lane)
		}
	}
	// Two node Pods: each created by the Job controller, bound, Running.
	// The namespace's deletion after the scenario is not recorded.
	want := map[string]int{
		reports.EntryWrite:         4,
		reports.EntryJobSetCreated: 1,
		reports.EntryJobCreated:    1,
		reports.EntryPodCreated:    2,
		reports.EntryPodBound:      2,
		reports.EntryPodPhase:      2,
		reports.EntryPodDeleted:    0,
		reports.EntryJobDeleted:    0,
	}
	got := map[string]int{}
	for k := range want {
		got[k] = kinds[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries by kind mismatch (-want +got):\n%s\nall kinds: %v", diff, kinds)
	}
	if kinds[reports.EntryEvent] == 0 {
		t.Errorf("no event recorded; kinds: %v", kinds)
	}

	// Kueue's apply gets the trainer webhook's time stamp on its entry.
	apply := res.Steps[1].Writes[0]
	var stamped bool
	for _, m := range apply.Mutations {
		if m.Path == "spec.runtimePatches[manager=kueue.x-k8s.io/manager].time" && m.Kind == reports.FieldAdded && m.Stored != "" {
			stamped = true
		}
	}
	if !stamped {
		t.Errorf("Kueue's apply has no added time in its mutations: %+v", apply.Mutations)
	}
}
