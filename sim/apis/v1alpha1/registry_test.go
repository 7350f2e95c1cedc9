package v1alpha1

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// jsonFields returns the json names of a struct type's fields.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// TestVerbsAreTheStepsFields checks that the registry and Step agree: every
// field of a step but those that qualify its verb is a verb, and each
// verb's In sees exactly its own field.
func TestVerbsAreTheStepsFields(t *testing.T) {
	notVerbs := []string{"name", "trainer", "actor", "release", "force", "fieldValidation", "expectError", "expect"}
	var fields []string
	for _, f := range jsonFields(reflect.TypeFor[Step]()) {
		if !slices.Contains(notVerbs, f) {
			fields = append(fields, f)
		}
	}
	if diff := cmp.Diff(fields, VerbNames(nil)); diff != "" {
		t.Errorf("Step's verb fields and Verbs differ (-fields +Verbs):\n%s", diff)
	}
	for _, v := range Verbs {
		var st Step
		if err := json.Unmarshal([]byte(`{"`+v.Name+`": {}}`), &st); err != nil {
			t.Fatal(err)
		}
		if got := VerbNames(func(o Verb) bool { return o.In(&st) }); !slices.Equal(got, []string{v.Name}) {
			t.Errorf("a step with only %s uses %v", v.Name, got)
		}
		if got, ok := VerbOf(&st); !ok || got.Name != v.Name {
			t.Errorf("VerbOf a step with only %s = %s, %v", v.Name, got.Name, ok)
		}
		if got, ok := LookupVerb(v.Name); !ok || got.Name != v.Name {
			t.Errorf("LookupVerb(%s) = %s, %v", v.Name, got.Name, ok)
		}
	}
	if _, ok := VerbOf(&Step{Name: "only expects", Expect: &Expect{}}); ok {
		t.Error("a step without a verb has one")
	}
}

// TestExpectationsAreTheExpectsFields checks that the registry and Expect
// agree: every field but within is a kind of expectation.
func TestExpectationsAreTheExpectsFields(t *testing.T) {
	var fields []string
	for _, f := range jsonFields(reflect.TypeFor[Expect]()) {
		if f != "within" {
			fields = append(fields, f)
		}
	}
	if diff := cmp.Diff(fields, ExpectationNames()); diff != "" {
		t.Errorf("Expect's fields and Expectations differ (-fields +Expectations):\n%s", diff)
	}
	values := map[string]string{"pods": `{}`, "objects": `[{}]`, "events": `[{}]`, "owners": `[{}]`, "noOverlaps": `"llm"`, "requests": `[{}]`, "holding": `"gate"`, "held": `[{}]`}
	for _, k := range Expectations {
		var e Expect
		if err := json.Unmarshal([]byte(`{"`+k.Name+`": `+values[k.Name]+`}`), &e); err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		for _, o := range Expectations {
			if got := o.In(&e); got != (o.Name == k.Name) {
				t.Errorf("an expect with only %s: %s.In = %v", k.Name, o.Name, got)
			}
		}
	}
}
