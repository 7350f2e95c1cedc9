package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// minimal is a valid scenario without its spec, to append one to.
const minimal = "apiVersion: sim.trainersim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\n"

// withData is a valid scenario whose ConfigMap data is %s.
const withData = minimal + "spec:\n  steps:\n  - name: s\n    create: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: %s}\n"

// TestLoadEdgeCases covers YAML features and parser errors that need no
// file of their own.
func TestLoadEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"parser error on line 1", "a: b: c\n", []string{"in.yaml:1:5: invalid YAML: mapping values are not allowed in this context"}},
		{"parser error in a block mapping", "a:\n  - b\n c: d\n", []string{`in.yaml:3:2: invalid YAML: "c" is indented 1 space, which lines up with no field above it: "a" is at 0, and its fields (such as "b") at 2 (the parser: did not find expected key)`}},
		{"unknown anchor", "apiVersion: a\nkind: *nope\n", []string{"in.yaml:2:7: invalid YAML: unknown anchor 'nope' referenced"}},
		{"invalid UTF-8", "apiVersion: \xff\n", []string{"in.yaml:1:13: invalid YAML: invalid leading UTF-8 octet (value: 255)"}},
		{"control character", "apiVersion: a\x01b\n", []string{"in.yaml:1:14: invalid YAML: control characters are not allowed (value: 1)"}},
		{"empty document", "---\n", []string{"in.yaml:1:1: empty document: a scenario file holds one Scenario"}},
		{"scalar document", "hello\n", []string{"in.yaml:1:1: a scenario must be a mapping, found string \"hello\""}},
		{"byte order mark", "\ufeff" + minimal + "spec: {steps: [{name: a, get: {kind: Pod, name: n}}]}\n", nil},
		{"trailing document separator", minimal + "spec: {steps: [{name: a, get: {kind: Pod, name: n}}]}\n---\n# end\n", nil},
		{"explicit null second document", minimal + "spec: {steps: [{name: a, get: {kind: Pod, name: n}}]}\n---\n~\n", []string{
			"in.yaml:6:1: a second YAML document: a scenario file holds exactly one Scenario",
		}},
		{"document after an empty one", minimal + "spec: {steps: [{name: a, get: {kind: Pod, name: n}}]}\n---\n---\nkind: Scenario\n", []string{
			"in.yaml:7:1: a second YAML document: a scenario file holds exactly one Scenario",
		}},
		{"timestamp-like string", minimal + "spec: {steps: [{name: 2024-01-01, get: {kind: Pod, name: n}}]}\n", nil},
		{"boolean where a string belongs", minimal + "spec: {nodes: [{profile: cpu, count: 1, taints: [{key: k, value: true, effect: NoSchedule}]}], steps: [{name: a, get: {kind: Pod, name: n}}]}\n", []string{
			"in.yaml:4:66: spec.nodes[0].taints[0].value: expected a string, found boolean true (quote it to make it a string)",
		}},
		{"string tag where a boolean belongs", minimal + "spec: {steps: [{name: a, get: {kind: Pod, name: n}, force: !!str true}]}\n", []string{
			`in.yaml:4:60: spec.steps[0].force: expected true or false, found string "true"`,
		}},
		{"integer out of range", minimal + "spec: {steps: [{name: a, expect: {pods: {count: 99999999999999999999}}}]}\n", []string{
			"in.yaml:4:49: spec.steps[0].expect.pods.count: expected an integer, found number 99999999999999999999",
		}},
		{"duplicate key in flow mapping", minimal + "spec: {steps: [{name: a, get: {kind: Pod, name: n}}], steps: []}\n", []string{
			`in.yaml:4:55: spec: duplicate key "steps" (first at line 4)`,
		}},
		{"infinity in an object", strings.Replace(withData, "%s", "{a: .inf}", 1), []string{
			`in.yaml:7:78: spec.steps[0].create.data.a: ".inf" is not a number JSON can hold`,
		}},
		{"custom tag in an object", strings.Replace(withData, "%s", "{a: !custom x}", 1), []string{
			"in.yaml:7:78: spec.steps[0].create.data.a: unsupported YAML tag !custom",
		}},
		{"list as a key", strings.Replace(withData, "%s", "{[a]: b}", 1), []string{
			"in.yaml:7:75: spec.steps[0].create.data: a key must be a string, found a list",
		}},
		{"scalars of every kind in an object", strings.Replace(withData, "%s", "{a: 0x10, b: 99999999999999999999, c: 1e3, d: ~, e: 2001-12-14t21:59:43.10-05:00, f: ! 12, g: !!binary aGk=}", 1), nil},
		{"merge key with a scalar", minimal + "spec:\n  <<: 3\n  steps: []\n", []string{
			"in.yaml:5:7: spec: a merge key (<<) takes a mapping or a list of mappings, found integer 3",
		}},
		{"merge key with a list of scalars", minimal + "spec:\n  <<: [3]\n  steps: []\n", []string{
			"in.yaml:5:8: spec: a merge key (<<) takes a mapping or a list of mappings, found a list of integer 3",
		}},
		{"aliased step repeats its name", minimal + "spec:\n  steps:\n  - &a {name: a, get: {kind: Pod, name: n}}\n  - *a\n", []string{
			`in.yaml:6:15: spec.steps[1].name: duplicate step name "a" (first used by spec.steps[0] at line 6)`,
		}},
		{"alias cycle through a merge key", minimal + "spec: &s\n  <<: *s\n  steps: []\n", []string{
			"in.yaml:5:7: spec: alias *s refers to a node that contains it",
		}},
		{"billion laughs", strings.Join([]string{
			"a: &a [x, x, x, x, x, x, x, x, x, x]",
			"b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]",
			"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]",
			"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]",
			"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]",
			"f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]",
			"apiVersion: sim.trainersim.dev/v1alpha1",
			"kind: Scenario",
			"metadata: {name: x}",
			"spec: {steps: [{name: s, patch: {type: json, target: {kind: Pod, name: n}, body: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]}}]}",
			"",
		}, "\n"), []string{
			`in.yaml:1:1: unknown field "a"`,
			`in.yaml:2:1: unknown field "b"`,
			`in.yaml:3:1: unknown field "c"`,
			`in.yaml:4:1: unknown field "d"`,
			`in.yaml:5:1: unknown field "e"`,
			`in.yaml:6:1: unknown field "f"`,
		}},
		{"billion laughs in an object", strings.Join([]string{
			"apiVersion: sim.trainersim.dev/v1alpha1",
			"kind: Scenario",
			"metadata: {name: x}",
			"spec: {steps: [{name: s, patch: {type: json, target: {kind: Pod, name: n}, body: [",
			"  &a [x, x, x, x, x, x, x, x, x, x],",
			"  &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a],",
			"  &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b],",
			"  &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c],",
			"  &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d],",
			"  &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]]}}]}",
			"",
		}, "\n"), []string{
			"in.yaml:5:19: spec.steps[0].patch.body[4][7][8][9][9][4]: document too large: aliases expand to more than 100000 nodes",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("in.yaml", []byte(tc.in), Options{FixturesDir: testFixtures})
			if diff := cmp.Diff(tc.want, messages(t, err)); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		want string
	}{
		{Error{File: "a.yaml", Line: 12, Column: 5, Field: "spec.steps[2].apply", Message: `unknown field "foo"`}, `a.yaml:12:5: spec.steps[2].apply: unknown field "foo"`},
		{Error{File: "a.yaml", Line: 12, Message: "invalid YAML: x"}, "a.yaml:12: invalid YAML: x"},
		{Error{File: "a.yaml", Message: "empty file"}, "a.yaml: empty file"},
		{Error{File: "a.yaml", Line: 1, Column: 1, Field: "kind", Message: "m"}, "a.yaml:1:1: kind: m"},
		{Error{Message: "m"}, "m"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	errs := Errors{{File: "a", Message: "one"}, {File: "b", Message: "two"}}
	if got, want := errs.Error(), "a: one\nb: two"; got != want {
		t.Errorf("Errors.Error() = %q, want %q", got, want)
	}
}

// TestCheckSchemaLine: the editor schema line is optional; what
// CheckSchemaLine returns is a warning, at the line it is about.
func TestCheckSchemaLine(t *testing.T) {
	const want = `"# yaml-language-server: $schema=../../apis/v1alpha1/scenario.schema.json"`
	missing := "testdata/x.yaml:1:1: no editor schema line: with " + want + " as the first line, editors that use the YAML language server complete and check the file"
	for _, tc := range []struct {
		name, data, want string
	}{
		{"right", "# yaml-language-server: $schema=../../apis/v1alpha1/scenario.schema.json\nkind: Scenario\n", ""},
		{"right with CRLF and a BOM", "\ufeff# yaml-language-server: $schema=../../apis/v1alpha1/scenario.schema.json\r\nkind: Scenario\r\n", ""},
		{"an https URL", "# yaml-language-server: $schema=https://example.com/v1/scenario.schema.json\n", ""},
		{"a URL to a schema of another name", "# yaml-language-server: $schema=https://raw.example.com/trainersim-v1alpha1.json\n", ""},
		{"the newer $schema: form", "# yaml-language-server: $schema: https://example.com/v1/scenario.schema.json\n", ""},
		{"on line 2, as the language server reads it", "# a scenario\n# yaml-language-server: $schema=../../apis/v1alpha1/scenario.schema.json\n", ""},
		{"an absolute path", "# yaml-language-server: $schema=" + mustAbs(t, "../apis/v1alpha1/scenario.schema.json") + "\n", ""},
		{"missing", "apiVersion: sim.trainersim.dev/v1alpha1\n", missing},
		{"empty file", "", missing},
		{"a comment that is not the modeline", "# yaml-language-server is what VS Code uses\nkind: Scenario\n", missing},
		{"no $schema", "# yaml-language-server: $format.date=true\n", "testdata/x.yaml:1:1: the yaml-language-server line names no $schema, so editors do not check this file against the scenario schema: want " + want},
		{"wrong relative path", "# yaml-language-server: $schema=../apis/v1alpha1/scenario.schema.json\n", `testdata/x.yaml:1:33: the schema line names "../apis/v1alpha1/scenario.schema.json", which is not there relative to this file, so editors cannot check it: want ` + want},
		{"wrong relative path on line 3", "# one\n# two\n  # yaml-language-server: $schema=scenario.schema.json\n", `testdata/x.yaml:3:35: the schema line names "scenario.schema.json", which is not there relative to this file, so editors cannot check it: want ` + want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if e := CheckSchemaLine("testdata/x.yaml", []byte(tc.data)); e != nil {
				got = e.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CheckSchemaLine mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func TestCheckSchemaLineOutsideACheckout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	e := CheckSchemaLine(path, []byte("kind: Scenario\n"))
	want := `no editor schema line: with "# yaml-language-server: $schema=<path to sim/apis/v1alpha1/scenario.schema.json>" as the first line, editors that use the YAML language server complete and check the file`
	if e == nil || e.Message != want {
		t.Errorf("CheckSchemaLine = %v, want message %q", e, want)
	}
}

func TestFindFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.yaml", "a/z.yml", "a/y.yaml", "a/notes.txt", ".hidden/h.yaml", "a/.git/g.yaml", "scale/fleet.yaml", "c/scale/big.yaml", "found/kept.yaml"} {
		path := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	// A scale directory is skipped below a path, walked when
	// named.
	got, err := FindFiles([]string{".", "a/notes.txt", "b.yaml", "empty", "missing", "c/scale"})
	want := []string{"a/y.yaml", "a/z.yml", "b.yaml", "found/kept.yaml", "a/notes.txt", "c/scale/big.yaml"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
	wantErrs := []string{
		"empty: no *.yaml or *.yml files in this directory",
		"missing: failed to read file: no such file or directory",
	}
	if diff := cmp.Diff(wantErrs, messages(t, err)); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}

// TestDefaultFixturesDir checks that without Options.FixturesDir setup
// paths resolve in the nearest fixtures/ above the working directory.
func TestDefaultFixturesDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "fixtures", "runtimes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fixtures", "runtimes", "r.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "scenarios", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(dir, "scenarios", "deep"))
	found, err := FindFixturesDir()
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks(filepath.Join(dir, "fixtures")); mustEval(t, found) != want {
		t.Errorf("FindFixturesDir() = %s, want %s", found, want)
	}
	scenario := minimal + "spec:\n  setup:\n  - path: runtimes/%s\n  steps: [{name: a, get: {kind: Pod, name: n}}]\n"
	if _, err := Load("s.yaml", []byte(strings.Replace(scenario, "%s", "r.yaml", 1)), Options{}); err != nil {
		t.Errorf("Load: %v", err)
	}
	_, err = Load("s.yaml", []byte(strings.Replace(scenario, "%s", "nope.yaml", 1)), Options{})
	want := `s.yaml:6:11: spec.setup[0].path: unknown fixture "runtimes/nope.yaml": no such file in ` + found
	if diff := cmp.Diff([]string{want}, messages(t, err)); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}

func mustEval(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNoFixturesDir(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if _, err := FindFixturesDir(); err == nil {
		t.Skip("a fixtures directory exists above the temporary directory")
	}
	in := minimal + "spec:\n  setup:\n  - path: runtimes/r.yaml\n  steps: [{name: a, get: {kind: Pod, name: n}}]\n"
	_, err := Load("s.yaml", []byte(in), Options{})
	got := messages(t, err)
	if len(got) != 1 || !strings.Contains(got[0], `cannot resolve fixture "runtimes/r.yaml": no fixtures directory in`) {
		t.Errorf("errors = %q, want one saying no fixtures directory was found", got)
	}
}
