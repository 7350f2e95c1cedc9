package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
)

// invalidExpectations are, by kind, a value of the kind the loader must
// refuse: the proof that lint looks at it. A new kind needs one here.
var invalidExpectations = map[string]string{
	"pods":       "{count: -1}",
	"objects":    `[{target: {kind: "", name: x}}]`,
	"events":     "[{involvedKind: Pod, bogus: 1}]",
	"owners":     `[{target: {kind: TrainJob, name: x}, field: "spec..suspend", manager: m}]`,
	"noOverlaps": `"Not A Name"`,
	"requests":   `[{component: kueue, target: {kind: TrainJob, name: x}, status: 409}]`,
	"holding":    "gate",
	"held":       "[{gate: missing}]",
}

// TestRegistry checks that every verb of v1alpha1.Verbs and every kind of
// v1alpha1.Expectations, the one list of each, is handled by the runner,
// linted by the loader, rendered by the reports and documented (the
// reference generated from the registry, and docs/scenarios.md's account
// of the format). A new entry that something does not handle fails here, naming
// what.
func TestRegistry(t *testing.T) {
	guide := readFile(t, "../../docs/scenarios.md")
	prose := between(t, guide, "What a scenario can say", "## Running scenarios")
	reference := readFile(t, "../../docs/scenario-reference.md")
	stepDocs := between(t, reference, "\n## Step\n", "\n## ")
	expectDocs := between(t, reference, "\n## Expect\n", "\n## ")

	for _, v := range v1alpha1.Verbs {
		t.Run("verb "+v.Name, func(t *testing.T) {
			if !HandlesVerb(v.Name) {
				t.Errorf("the runner has no writer for %s (writers in writes.go)", v.Name)
			}
			checkDiffRule(t, v)
			if !scenario.LintsVerb(v.Name) {
				t.Errorf("the loader does not check %s (verbChecks in sim/scenario/validate.go)", v.Name)
			}
			lints(t, fmt.Sprintf("  - name: s\n    %s: {}\n", v.Name), "spec.steps[0]."+v.Name)
			checkRendered(t, v)
			documented(t, v.Name, prose, stepDocs, "Verbs, at most one per step:")
		})
	}
	for _, k := range v1alpha1.Expectations {
		t.Run("expectation "+k.Name, func(t *testing.T) {
			if !HandlesExpectation(k.Name) {
				t.Errorf("the runner does not check %s (checkers in expect.go)", k.Name)
			}
			if !scenario.LintsExpectation(k.Name) {
				t.Errorf("the loader does not check %s (expectationChecks in sim/scenario/validate.go)", k.Name)
			}
			invalid, ok := invalidExpectations[k.Name]
			if !ok {
				t.Fatalf("no invalid %s to lint: add one to invalidExpectations", k.Name)
			}
			lints(t, fmt.Sprintf("  - name: s\n    expect:\n      %s: %s\n", k.Name, invalid), "spec.steps[0].expect."+k.Name)
			// The reports render an expectation's failure and diff as the
			// runner wrote them: nothing in them depends on the kind.
			documented(t, k.Name, prose, expectDocs, "Expectations, at least one per expect:")
		})
	}
}

// checkDiffRule checks that the runner compares what a verb sends with
// what the server stored, as its Body says.
func checkDiffRule(t *testing.T, v v1alpha1.Verb) {
	t.Helper()
	types := []string{""}
	if v.Body == v1alpha1.PatchBody {
		types = []string{v1alpha1.PatchMerge, v1alpha1.PatchJSON}
	}
	for _, pt := range types {
		body := "{spec: {a: 1}}"
		if pt == v1alpha1.PatchJSON {
			body = "[{op: replace, path: /spec/a, value: 1}]"
		}
		got := mutations(sending(t, v.Name, pt, body), map[string]any{"spec": map[string]any{"a": 2}})
		switch {
		case v.Body == v1alpha1.NoBody && got != nil:
			t.Errorf("%s sends no object, but mutations compared one: %v", v.Name, got)
		case v.Body != v1alpha1.NoBody && (len(got) != 1 || got[0].Path != "spec.a"):
			t.Errorf("%s %s: mutations = %v, want the change of spec.a", v.Name, pt, got)
		}
	}
}

// lints checks that the loader refuses a scenario whose steps are steps,
// with a problem at a field under want.
func lints(t *testing.T, steps, want string) {
	t.Helper()
	doc := "apiVersion: sim.trainersim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nspec:\n  steps:\n" + steps
	_, err := scenario.Load("in.yaml", []byte(doc), scenario.Options{})
	var errs *scenario.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("the loader accepted\n%s\n(err %v)", doc, err)
	}
	for _, e := range *errs {
		if e.Field == want || strings.HasPrefix(e.Field, want+".") || strings.HasPrefix(e.Field, want+"[") {
			return
		}
	}
	t.Errorf("the loader found no problem under %s in\n%s\nonly:\n%v", want, doc, err)
}

// checkRendered checks that the reports show the verb: on each write's
// card in report.html and in junit.xml for a write, as the step's kind for
// a group.
func checkRendered(t *testing.T, v v1alpha1.Verb) {
	t.Helper()
	st := results.Step{Name: "s", Kind: v.Name, Failure: "failed on purpose"}
	if !v.Group {
		st.Writes = []results.Write{{Actor: "a", FieldManager: "m", Verb: v.Name, Target: "TrainJob ns/llm", Status: 200}}
	}
	run := &results.Run{Scenarios: []results.Scenario{{Name: "x", File: "x.yaml", Steps: []results.Step{st}, Failure: "failed"}}}
	var html, junit bytes.Buffer
	if err := reports.WriteHTML(&html, run); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteJUnit(&junit, run); err != nil {
		t.Fatal(err)
	}
	wantHTML, wantJUnit := `<span class="verb">`+v.Name, "verb: "+v.Name
	if v.Group {
		wantHTML, wantJUnit = `<span class="kind">`+v.Name+`</span>`, "("+v.Name+")"
	}
	if !strings.Contains(html.String(), wantHTML) {
		t.Errorf("report.html does not show %s: no %q", v.Name, wantHTML)
	}
	if !strings.Contains(junit.String(), wantJUnit) {
		t.Errorf("junit.xml does not show %s: no %q", v.Name, wantJUnit)
	}
}

// documented checks that docs/scenarios.md's account of the format names the
// field and that the generated reference has its row and lists it.
func documented(t *testing.T, name, prose, section, list string) {
	t.Helper()
	if !regexp.MustCompile("`(expect\\.)?" + regexp.QuoteMeta(name) + `\b`).MatchString(prose) {
		t.Errorf("docs/scenarios.md's \"What a scenario can say\" does not name `%s`", name)
	}
	if !strings.Contains(section, "| `"+name+"` |") {
		t.Errorf("docs/scenario-reference.md has no row of %s: run go run ./hack/schemagen", name)
	}
	line := between(t, section, list, "\n")
	if !strings.Contains(line, "`"+name+"`") {
		t.Errorf("docs/scenario-reference.md's %q does not list %s: run go run ./hack/schemagen", list, name)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// between returns what follows the first begin in s, up to the next end.
func between(t *testing.T, s, begin, end string) string {
	t.Helper()
	_, after, ok := strings.Cut(s, begin)
	if !ok {
		t.Fatalf("no %q", begin)
	}
	before, _, _ := strings.Cut(after, end)
	return before
}
