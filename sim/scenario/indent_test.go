package scenario

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMisindented: the line an indentation mistake breaks is found and its
// field named; a file whose lines all line up has none, whatever its block
// scalars, sequences and continued plain scalars hold.
func TestMisindented(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line, col  int
		msg        string
	}{{
		name: "a field between its parent and its siblings",
		yaml: "spec:\n  steps:\n  - name: a\n    create:\n      spec:\n        runtimeRef:\n          name: x\n       suspend: true\n",
		line: 8, col: 8,
		msg: `"suspend" is indented 7 spaces, which lines up with no field above it: "spec" is at 6, and its fields (such as "runtimeRef") at 8`,
	}, {
		name: "a top-level field indented by one",
		yaml: "apiVersion: v1\nkind: Scenario\nspec:\n  steps: []\n metadata: {}\n",
		line: 5, col: 2,
		msg: `"metadata" is indented 1 space, which lines up with no field above it: "spec" is at 0, and its fields (such as "steps") at 2`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			line, col, msg, ok := misindented([]byte(tc.yaml))
			if !ok || line != tc.line || col != tc.col || msg != tc.msg {
				t.Errorf("misindented = %d:%d %q %v, want %d:%d %q", line, col, msg, ok, tc.line, tc.col, tc.msg)
			}
		})
	}
	files, err := filepath.Glob("../../scenarios/*/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if line, _, msg, ok := misindented(data); ok {
			t.Errorf("%s:%d: a valid file has a misindented line: %s", f, line, msg)
		}
	}
}
