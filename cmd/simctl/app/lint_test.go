package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runLint runs "simctl lint args..." through the root command, with lint
// added if app.go does not register it yet.
func runLint(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}
	root := newRootCommand(streams)
	if c, _, err := root.Find([]string{"lint"}); err != nil || c == root {
		root.AddCommand(newLintCommand(streams))
	}
	root.SetArgs(append([]string{"lint"}, args...))
	err := root.Execute()
	return out.String(), errOut.String(), ExitCode(err)
}

func TestLintValid(t *testing.T) {
	stdout, stderr, code := runLint(t, "testdata/lint/good")
	if code != ExitOK {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, ExitOK, stderr)
	}
	if diff := cmp.Diff("2 scenarios in 2 files: ok\n", stdout); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}
	if stderr != "" {
		t.Errorf("stderr = %q, want nothing", stderr)
	}
}

func TestLintProblems(t *testing.T) {
	stdout, stderr, code := runLint(t, "testdata/lint/good", "testdata/lint/bad", "testdata/lint/missing.yaml")
	if code != ExitUsage {
		t.Errorf("exit code %d, want %d", code, ExitUsage)
	}
	wantErr := strings.Join([]string{
		`testdata/lint/missing.yaml: failed to read file: no such file or directory`,
		`testdata/lint/bad/no-schema-line.yaml:1:1: the first line must be "# yaml-language-server: $schema=../../../../../../sim/apis/v1alpha1/scenario.schema.json", so that editors validate the file against the scenario schema`,
		`testdata/lint/bad/problems.yaml:5:9: metadata.name: duplicate scenario name "lint-good-train": testdata/lint/good/train.yaml:5 has it too`,
		`testdata/lint/bad/problems.yaml:12:12: spec.steps[0].actor: unknown actor "kueue" (declared actors: sdk)`,
		`testdata/lint/bad/problems.yaml:14:13: spec.steps[0].patch.type: unknown patch type "strategic": must be merge or json`,
		`testdata/lint/bad/typo.yaml:7:3: spec: unknown field "step" (did you mean "steps"?)`,
		``,
	}, "\n")
	if diff := cmp.Diff(wantErr, stderr); diff != "" {
		t.Errorf("stderr mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("6 problems in 5 files\n", stdout); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}
}

// TestLintReportsEverySemanticProblem lints one file alone, so that its
// name is not a duplicate and its own problems show.
func TestLintReportsEverySemanticProblem(t *testing.T) {
	stdout, stderr, code := runLint(t, "testdata/lint/bad/problems.yaml")
	if code != ExitUsage {
		t.Errorf("exit code %d, want %d", code, ExitUsage)
	}
	wantErr := `testdata/lint/bad/problems.yaml:12:12: spec.steps[0].actor: unknown actor "kueue" (declared actors: sdk)
testdata/lint/bad/problems.yaml:14:13: spec.steps[0].patch.type: unknown patch type "strategic": must be merge or json
`
	if diff := cmp.Diff(wantErr, stderr); diff != "" {
		t.Errorf("stderr mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("2 problems in 1 file\n", stdout); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}
}

func TestLintFixturesFlag(t *testing.T) {
	_, stderr, code := runLint(t, "--fixtures", t.TempDir(), "testdata/lint/good/train.yaml")
	if code != ExitUsage {
		t.Errorf("exit code %d, want %d", code, ExitUsage)
	}
	if !strings.Contains(stderr, `spec.setup[0].path: unknown fixture "runtimes/torch_distributed.yaml": no such file in `) {
		t.Errorf("stderr %q does not name the unknown fixture", stderr)
	}
}

func TestLintUsage(t *testing.T) {
	_, _, code := runLint(t)
	if code != ExitUsage {
		t.Errorf("lint without PATH: exit code %d, want %d", code, ExitUsage)
	}
	_, _, code = runLint(t, "--bogus", "x.yaml")
	if code != ExitUsage {
		t.Errorf("lint --bogus: exit code %d, want %d", code, ExitUsage)
	}
}

// TestLintCommandAlone runs the command without a root, as app.go would
// see it before it is registered.
func TestLintCommandAlone(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := newLintCommand(Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	cmd.SetArgs([]string{"testdata/lint/good/nested/read.yml"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("lint: %v\n%s", err, errOut.String())
	}
	if diff := cmp.Diff("1 scenario in 1 file: ok\n", out.String()); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}
}
