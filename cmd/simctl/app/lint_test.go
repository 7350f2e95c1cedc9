package app

import (
	"bytes"
	"path/filepath"
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

// lintPasses runs lint on args and checks that it passes with exactly the
// output given.
func lintPasses(t *testing.T, wantOut, wantErr string, args ...string) {
	t.Helper()
	stdout, stderr, code := runLint(t, args...)
	if code != ExitOK {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, ExitOK, stderr)
	}
	if diff := cmp.Diff(wantOut, stdout); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantErr, stderr); diff != "" {
		t.Errorf("stderr mismatch (-want +got):\n%s", diff)
	}
}

func TestLintValid(t *testing.T) {
	lintPasses(t, "2 scenarios in 2 files: ok\n", "", "testdata/lint/good")
}

func TestLintProblems(t *testing.T) {
	stdout, stderr, code := runLint(t, "testdata/lint/good", "testdata/lint/bad", "testdata/lint/missing.yaml")
	if code != ExitUsage {
		t.Errorf("exit code %d, want %d", code, ExitUsage)
	}
	wantErr := strings.Join([]string{
		`testdata/lint/missing.yaml: failed to read file: no such file or directory`,
		`testdata/lint/bad/problems.yaml:5:9: metadata.name: duplicate scenario name "lint-good-train": testdata/lint/good/train.yaml:5 has it too`,
		`testdata/lint/bad/problems.yaml:12:12: spec.steps[0].actor: unknown actor "kueue" (declared actors: sdk)`,
		`testdata/lint/bad/problems.yaml:14:13: spec.steps[0].patch.type: unknown patch type "strategic": must be merge or json`,
		`testdata/lint/bad/typo.yaml:7:3: spec: unknown field "step" (did you mean "steps"?)`,
		``,
	}, "\n")
	if diff := cmp.Diff(wantErr, stderr); diff != "" {
		t.Errorf("stderr mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("5 problems in 4 files\n", stdout); diff != "" {
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

// TestLintSchemaLineWarnings: the editor schema line is optional. A file
// without one, or with one that names a file that is not there, is valid
// and gets a warning at the line; a URL is accepted as it is.
func TestLintSchemaLineWarnings(t *testing.T) {
	stdout, stderr, code := runLint(t, "testdata/lint/schema-line", "testdata/lint/bad/typo.yaml")
	if code != ExitUsage {
		t.Errorf("exit code %d, want %d (typo.yaml has a problem)", code, ExitUsage)
	}
	want := "../../../../../../sim/apis/v1alpha1/scenario.schema.json"
	wantErr := strings.Join([]string{
		`testdata/lint/schema-line/no-schema-line.yaml:1:1: warning: no editor schema line: with "# yaml-language-server: $schema=` + want + `" as the first line, editors that use the YAML language server complete and check the file`,
		`testdata/lint/schema-line/schema-not-there.yaml:1:33: warning: the schema line names "../sim/apis/v1alpha1/scenario.schema.jso...", which is not there relative to this file, so editors cannot check it: want "# yaml-language-server: $schema=` + want + `"`,
		`testdata/lint/bad/typo.yaml:7:3: spec: unknown field "step" (did you mean "steps"?)`,
		``,
	}, "\n")
	if diff := cmp.Diff(wantErr, stderr); diff != "" {
		t.Errorf("stderr mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("1 problem in 4 files; 2 warnings\n", stdout); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}

	// Warnings alone: exit 0.
	stdout, _, code = runLint(t, "testdata/lint/schema-line")
	if code != ExitOK {
		t.Errorf("exit code %d, want %d: warnings never fail lint", code, ExitOK)
	}
	if diff := cmp.Diff("3 scenarios in 3 files: ok; 2 warnings\n", stdout); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}
}

// normativeExample is the example of the scenario format that issue 3 calls
// normative ("it must load and pass exactly as written"), copied verbatim:
// it has no editor schema line.
const normativeExample = "../../../sim/scenario/testdata/valid-normative-example.yaml"

// TestLintNormativeExample: the normative example lints as written, with a
// warning about its missing schema line and a note of the Trainer releases
// its runtimePatches imply.
func TestLintNormativeExample(t *testing.T) {
	wantErr := normativeExample + `:1:1: warning: no editor schema line: with "# yaml-language-server: $schema=../../apis/v1alpha1/scenario.schema.json" as the first line, editors that use the YAML language server complete and check the file` + "\n" +
		normativeExample + `:42:9: note: spec.steps[0].create.spec.runtimePatches: spec.trainer.versions is not given: the TrainJob fields the scenario writes (spec.runtimePatches >=v2.2.0) imply ">=v2.2.0", so it runs on Trainer v2.2.0, v2.2.1, v2.3.0 and is skipped on the others; set spec.trainer.versions to say so` + "\n"
	lintPasses(t, "1 scenario in 1 file: ok; 1 warning; 1 note\n", wantErr, "--fixtures", "../../../fixtures", normativeExample)
}

// TestRunLoadsWhatLintAccepts: run loads the files lint accepts, the
// normative example and those that only have warnings, and stops only at the
// cluster, which has no assets here.
func TestRunLoadsWhatLintAccepts(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	var paths []string
	for _, p := range []string{normativeExample, "testdata/lint/schema-line", "../../../fixtures"} {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, abs)
	}
	fixtures := paths[2]
	// Outside the checkout, so that no bin/k8s is found above it.
	t.Chdir(t.TempDir())
	for _, path := range paths[:2] {
		_, stderr, code := run(t, "run", "--assets", t.TempDir(), "--fixtures", fixtures, path)
		if code != ExitCluster {
			t.Errorf("run %s: exit code %d, want %d (loaded, then no cluster); stderr:\n%s", path, code, ExitCluster, stderr)
		}
		if strings.Contains(stderr, "invalid scenarios") {
			t.Errorf("run %s refused a file lint accepts:\n%s", path, stderr)
		}
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

// TestLintNote: a file without spec.trainer.versions that writes
// runtimePatches is valid, as it was before releases came into the format:
// lint passes and says, as a note with file:line:col, which range its
// fields imply.
func TestLintNote(t *testing.T) {
	want := `testdata/lint/implied/no-versions.yaml:21:9: note: spec.steps[0].create.spec.runtimePatches: spec.trainer.versions is not given: the TrainJob fields the scenario writes (spec.runtimePatches >=v2.2.0) imply ">=v2.2.0", so it runs on Trainer v2.2.0, v2.2.1, v2.3.0 and is skipped on the others; set spec.trainer.versions to say so` + "\n"
	lintPasses(t, "1 scenario in 1 file: ok; 1 note\n", want, "testdata/lint/implied")
}

// TestLintUpgradeNotBuilt: an upgrade to a release whose managers no bin/
// above the working directory holds is what the machine lacks, not what the
// file gets wrong: lint passes with a warning at the step's to that names
// what builds them (so that it passes on a clone before 'make assets'), and
// run refuses the file with the same message before it starts a cluster.
func TestLintUpgradeNotBuilt(t *testing.T) {
	file, err := filepath.Abs("testdata/lint/upgrade/to-v2-2-1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // no checkout above it, nor above the test binary
	cache := t.TempDir() // nor in the user's cache
	t.Setenv("XDG_CACHE_HOME", cache)
	message := "spec.steps[0].component.to: release binaries not found: run 'simctl assets --all' (or 'make assets' in the trainersim checkout); Trainer v2.2.1 needs bin/jobset/v0.11.1/jobset and bin/trainer/v2.2.1/trainer-controller-manager (in the working directory or a parent, or in " + filepath.Join(cache, "trainersim", "bin") + ")\n"
	lintPasses(t, "1 scenario in 1 file: ok; 1 warning\n", file+":17:11: warning: "+message, file)

	_, stderr, code := run(t, "run", "--assets", t.TempDir(), file)
	if code != ExitUsage {
		t.Errorf("run: exit code %d, want %d (refused before any cluster); stderr:\n%s", code, ExitUsage, stderr)
	}
	if !strings.Contains(stderr, file+":17:11: "+message) {
		t.Errorf("run's stderr does not refuse the step's to:\n%s", stderr)
	}
}
