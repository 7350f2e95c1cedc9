package results

import "testing"

func TestPassedAndIncomplete(t *testing.T) {
	passed := Scenario{Name: "a", Passed: true}
	failed := Scenario{Name: "b", Failure: "step \"x\": no"}
	skipped := Scenario{Name: "c", Skipped: "holds on kind only"}
	for _, tc := range []struct {
		name       string
		run        Run
		passed     bool
		incomplete string
	}{
		{"all passed or skipped", Run{Scenarios: []Scenario{passed, skipped}}, true, ""},
		{"one failed", Run{Scenarios: []Scenario{passed, failed}}, false, ""},
		{"interrupted", Run{Interrupted: true, Scenarios: []Scenario{passed}, NotReported: []string{"b", "c"}}, false,
			"run was interrupted: 1 scenario has results; 2 never reported"},
		{"killed", Run{Unfinished: true, Scenarios: []Scenario{passed, skipped}, NotReported: []string{"b"}}, false,
			"run did not finish: 2 scenarios have results; 1 never reported"},
	} {
		if got := tc.run.Passed(); got != tc.passed {
			t.Errorf("%s: Passed() = %v, want %v", tc.name, got, tc.passed)
		}
		if got := tc.run.Incomplete(); got != tc.incomplete {
			t.Errorf("%s: Incomplete() = %q, want %q", tc.name, got, tc.incomplete)
		}
	}
}

// TestWriteString: one line per write, the refused ones with reason and the
// first line of the message.
func TestWriteString(t *testing.T) {
	accepted := Write{Verb: "create", Target: "TrainJob ns/a", FieldManager: "kubeflow-sdk", Status: 201}
	refused := Write{Verb: "apply", Target: "TrainJob ns/a", FieldManager: "kueue", Status: 409, Reason: "Conflict", Message: "Apply failed with 1 conflict\nconflict with \"sdk\""}
	for w, want := range map[*Write]string{
		&accepted: "create TrainJob ns/a as kubeflow-sdk: HTTP 201",
		&refused:  "apply TrainJob ns/a as kueue: HTTP 409 Conflict: Apply failed with 1 conflict",
	} {
		if got := w.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
