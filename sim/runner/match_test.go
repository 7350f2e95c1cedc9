package runner

import (
	"strings"
	"testing"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
)

// jobSet is a JobSet-like object with the replicated jobs given.
func jobSet(jobs ...any) map[string]any {
	return map[string]any{"spec": map[string]any{"replicatedJobs": jobs}}
}

func TestPartialMatch(t *testing.T) {
	gpu := map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
	other := map[string]any{"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}
	for _, tc := range []struct {
		name      string
		want, got any
		exact     []string
		wantMatch bool
		diffHas   []string
	}{
		{"map subset", map[string]any{"a": 1}, map[string]any{"a": int64(1), "b": 2}, nil, true, nil},
		{"missing key", map[string]any{"a": 1, "c": 3}, map[string]any{"a": 1}, nil, false, []string{`"c": float64(3)`, "-"}},
		{"int vs float", map[string]any{"n": 8}, map[string]any{"n": int64(8)}, nil, true, nil},
		{"list subset any order",
			map[string]any{"tolerations": []any{gpu}},
			map[string]any{"tolerations": []any{other, gpu}}, nil, true, nil},
		{"replaced toleration shows as -want +got",
			map[string]any{"tolerations": []any{gpu}},
			map[string]any{"tolerations": []any{other}}, nil, false, []string{`-`, `"nvidia.com/gpu"`, `+`, `"team"`}},
		{"exact list order matters",
			map[string]any{"l": []any{"a", "b"}},
			map[string]any{"l": []any{"b", "a"}}, []string{"l"}, false, nil},
		{"exact list length matters",
			map[string]any{"l": []any{"a"}},
			map[string]any{"l": []any{"a", "b"}}, []string{"l"}, false, nil},
		{"exact empty list: the field absent",
			map[string]any{"l": []any{}},
			map[string]any{"m": 1}, []string{"l"}, true, nil},
		{"exact empty list: the list empty",
			map[string]any{"l": []any{}},
			map[string]any{"l": []any{}}, []string{"l"}, true, nil},
		{"exact empty list: an item is too many",
			map[string]any{"l": []any{}},
			map[string]any{"l": []any{"a"}}, []string{"l"}, false, nil},
		{"empty list, not exact: the field must exist",
			map[string]any{"l": []any{}},
			map[string]any{"m": 1}, nil, false, nil},
		{"subset list ignores extra items",
			map[string]any{"l": []any{"a"}},
			map[string]any{"l": []any{"a", "b"}}, nil, true, nil},
		{"type mismatch", map[string]any{"a": map[string]any{"b": 1}}, map[string]any{"a": "x"}, nil, false, []string{"-", "+"}},
		// Exact paths name places in got, list items by key or position.
		{"exact list under a keyed item",
			jobSet(map[string]any{"name": "node", "tolerations": []any{gpu}}),
			jobSet(map[string]any{"name": "init", "tolerations": []any{other}}, map[string]any{"name": "node", "tolerations": []any{other, gpu}}),
			[]string{"spec.replicatedJobs[name=node].tolerations"}, false, []string{`"team"`, "+"}},
		{"exact list under another item does not apply",
			jobSet(map[string]any{"name": "node", "tolerations": []any{gpu}}),
			jobSet(map[string]any{"name": "node", "tolerations": []any{other, gpu}}),
			[]string{"spec.replicatedJobs[name=init].tolerations"}, true, nil},
		{"exact list under an item by position",
			jobSet(map[string]any{"name": "node", "tolerations": []any{gpu}}),
			jobSet(map[string]any{"name": "init"}, map[string]any{"name": "node", "tolerations": []any{other, gpu}}),
			[]string{"spec.replicatedJobs[1].tolerations"}, false, nil},
		{"exact list under an item holds",
			jobSet(map[string]any{"name": "node", "tolerations": []any{gpu}}),
			jobSet(map[string]any{"name": "init", "tolerations": []any{other}}, map[string]any{"name": "node", "tolerations": []any{gpu}}),
			[]string{"spec.replicatedJobs[name=node].tolerations"}, true, nil},
		{"exact map has no other keys",
			map[string]any{"nodeSelector": map[string]any{"pool": "a"}},
			map[string]any{"nodeSelector": map[string]any{"pool": "a", "zone": "b"}},
			[]string{"nodeSelector"}, false, []string{`+`, `"zone"`}},
		{"exact map holds",
			map[string]any{"nodeSelector": map[string]any{"pool": "a"}},
			map[string]any{"nodeSelector": map[string]any{"pool": "a"}, "other": 1},
			[]string{"nodeSelector"}, true, nil},
		{"exact map key with dots",
			map[string]any{"labels": map[string]any{"a.b/c": []any{"x"}}},
			map[string]any{"labels": map[string]any{"a.b/c": []any{"x", "y"}}},
			[]string{`labels["a.b/c"]`}, false, nil},
		{"exact item keeps partial values inside",
			map[string]any{"l": []any{map[string]any{"name": "a"}}},
			map[string]any{"l": []any{map[string]any{"name": "a", "x": 1}}},
			[]string{"l"}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var exact []fieldpath.Path
			for _, s := range tc.exact {
				p, err := fieldpath.Parse(s)
				if err != nil {
					t.Fatal(err)
				}
				exact = append(exact, p)
			}
			ok, diff := partialMatch(tc.want, tc.got, exact)
			if ok != tc.wantMatch {
				t.Fatalf("match = %v, want %v; diff:\n%s", ok, tc.wantMatch, diff)
			}
			if ok && diff != "" {
				t.Errorf("matched but diff is not empty:\n%s", diff)
			}
			if !ok && diff == "" {
				t.Errorf("mismatch without a diff")
			}
			for _, s := range tc.diffHas {
				if !strings.Contains(diff, s) {
					t.Errorf("diff lacks %q:\n%s", s, diff)
				}
			}
		})
	}
}

func TestNodeNamesFitAHostnameLabel(t *testing.T) {
	ns := NamespaceName("a-scenario-name-long-enough-to-fill-the-whole-namespace-name-and-more")
	if len(ns) > 63 {
		t.Fatalf("namespace %q longer than 63", ns)
	}
	name := nodePrefix(ns) + "-9-nvidia-tesla-v100-12"
	if len(name) > 63 {
		t.Errorf("node name %q is %d characters, more than a label value may have", name, len(name))
	}
	if !strings.HasPrefix(name, "sim-"+ns[len(ns)-6:]) {
		t.Errorf("node name %q does not carry the namespace suffix of %q", name, ns)
	}
}

// TestObjectMismatchMatchAny: the object must match one of matchAny's
// objects, and match as well when both are given; a failure names
// matchAny and shows the diff against the closest alternative.
func TestObjectMismatchMatchAny(t *testing.T) {
	status := func(suspended float64) v1alpha1.Object {
		return v1alpha1.Object{"status": map[string]any{"jobsStatus": []any{map[string]any{"name": "node", "suspended": suspended}}}}
	}
	obj := func(suspended float64, suspend bool) map[string]any {
		return map[string]any{
			"spec":   map[string]any{"suspend": suspend},
			"status": map[string]any{"jobsStatus": []any{map[string]any{"name": "node", "active": 0.0, "suspended": suspended}}},
		}
	}
	want := &v1alpha1.ObjectExpectation{
		Target:   v1alpha1.Target{Kind: "TrainJob", Name: "llm"},
		Match:    v1alpha1.Object{"spec": map[string]any{"suspend": true}},
		MatchAny: []v1alpha1.Object{status(0), status(1)},
	}
	for _, c := range []struct {
		name      string
		obj       map[string]any
		msg       string
		diffHas   string
		diffLacks string
	}{
		{name: "the first alternative", obj: obj(0, true)},
		{name: "the second alternative", obj: obj(1, true)},
		{name: "neither", obj: obj(2, true), msg: "TrainJob llm matches none of the 2 objects of matchAny", diffHas: "closest of matchAny"},
		{name: "an alternative but not match", obj: obj(1, false), msg: "TrainJob llm does not match", diffHas: "suspend"},
	} {
		msg, diff := objectMismatch(want, c.obj)
		if msg != c.msg {
			t.Errorf("%s: %q, want %q", c.name, msg, c.msg)
		}
		if !strings.Contains(diff, c.diffHas) {
			t.Errorf("%s: diff %q lacks %q", c.name, diff, c.diffHas)
		}
	}
	// The diff is against the closest: 2 suspended differs from both by
	// the count, and names it.
	_, diff := objectMismatch(&v1alpha1.ObjectExpectation{
		Target:   v1alpha1.Target{Kind: "TrainJob", Name: "llm"},
		MatchAny: []v1alpha1.Object{{"status": map[string]any{"conditions": []any{map[string]any{"type": "Complete"}}, "jobsStatus": []any{map[string]any{"name": "other"}}}}, status(1)},
	}, obj(2, true))
	if !strings.Contains(diff, "suspended") || strings.Contains(diff, "Complete") {
		t.Errorf("diff %q: want the one against the closer alternative (1 suspended)", diff)
	}
}
