package auditimport

import (
	"strings"
	"testing"

	"github.com/trainersim/trainersim/results"
)

// TestTripAgrees: a round trip agrees when the replay keeps the original's
// verdict and ends with each entry owned by the same field managers (in
// any order of the report); an entry owned by another manager, or
// unowned, is a difference that names both.
func TestTripAgrees(t *testing.T) {
	sdk := results.EntryOwners{TrainJob: "llm", Entry: "trainer.kubeflow.org/kubeflow-sdk", Managers: []string{"kubeflow-sdk"}}
	kueue := results.EntryOwners{TrainJob: "llm", Entry: "kueue.x-k8s.io/manager", Managers: []string{"kueue"}}
	cleared := results.EntryOwners{TrainJob: "llm", Entry: "kueue.x-k8s.io/manager"}
	original := results.Scenario{Name: "s", Passed: true, FinalOwners: []results.EntryOwners{sdk, kueue}}
	for _, tc := range []struct {
		name   string
		replay results.Scenario
		agrees bool
		says   string
	}{
		{"same owners, another order", results.Scenario{Passed: true, FinalOwners: []results.EntryOwners{kueue, sdk}}, true, ""},
		{"another verdict", results.Scenario{Passed: false, Failure: "step x", FinalOwners: []results.EntryOwners{sdk, kueue}}, false, "the replay passed=false"},
		{"Kueue's entry left unowned", results.Scenario{Passed: true, FinalOwners: []results.EntryOwners{sdk, cleared}}, false, "llm kueue.x-k8s.io/manager: kueue;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trip := &Trip{Original: original, Replay: &tc.replay}
			if got := trip.Agrees(); got != tc.agrees {
				t.Errorf("Agrees() = %t, want %t", got, tc.agrees)
			}
			if d := trip.Difference(); !strings.Contains(d, tc.says) || (d == "") != tc.agrees {
				t.Errorf("Difference() = %q, want it to say %q", d, tc.says)
			}
		})
	}
}

// TestNotInTheLog: a run with a component step or a view that kept events
// back cannot be rebuilt from its log; a plain run can.
func TestNotInTheLog(t *testing.T) {
	plain := results.Scenario{Steps: []results.Step{{Kind: "create"}}, Timeline: &results.Timeline{Entries: []results.TimelineEntry{{Kind: results.EntryRequestHeld}}}}
	crash := results.Scenario{Steps: []results.Step{{Kind: "create"}, {Kind: "component"}}}
	viewed := results.Scenario{Timeline: &results.Timeline{Entries: []results.TimelineEntry{{Kind: results.EntryEventKeptBack}}}}
	if why := NotInTheLog(&plain); why != "" {
		t.Errorf("plain run: %q, want none", why)
	}
	if why := NotInTheLog(&crash); !strings.Contains(why, "a component step") {
		t.Errorf("run with a component step: %q", why)
	}
	if why := NotInTheLog(&viewed); !strings.Contains(why, "a view kept watch events back") {
		t.Errorf("run with a view: %q", why)
	}
}

// TestReplayedShaken: each shaken run of an import is a trip of its own,
// and one that differs says the seed and the command that runs it again;
// an import with no shaken run is a trip without a replay.
func TestReplayedShaken(t *testing.T) {
	original := results.Scenario{Name: "s", Namespace: "s-1a2b3c", Passed: true}
	other := results.Scenario{Name: "t", Namespace: "t-4d5e6f", Passed: true}
	shaken := results.Run{Scenarios: []results.Scenario{
		{Name: "s-1a2b3c", Passed: true, Shake: &results.Shake{Of: "s-1a2b3c", Seed: 100, Replay: "simctl run --shake-seed 100 s.yaml"}},
		{Name: "s-1a2b3c", Passed: false, Failure: "step 4: not true within 30s", Shake: &results.Shake{Of: "s-1a2b3c", Seed: 101, Replay: "simctl run --shake-seed 101 s.yaml"}},
	}}
	trips := ReplayedShaken([]*Trip{{Original: original}, {Original: other}}, shaken)
	if len(trips) != 3 {
		t.Fatalf("%d trips, want 3 (two shaken runs of s, none of t)", len(trips))
	}
	if !trips[0].Agrees() {
		t.Errorf("seed 100's replay passed as the original did: %s", trips[0].Difference())
	}
	if d := trips[1].Difference(); trips[1].Agrees() || !strings.Contains(d, "shaken with seed 101: simctl run --shake-seed 101 s.yaml") {
		t.Errorf("seed 101's replay failed: want a difference naming the seed and its command, got %q", d)
	}
	if trips[2].Agrees() || !strings.Contains(trips[2].Difference(), "no replay: t") {
		t.Errorf("t has no shaken run: want no replay, got %q", trips[2].Difference())
	}
}
