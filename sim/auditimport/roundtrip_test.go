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
