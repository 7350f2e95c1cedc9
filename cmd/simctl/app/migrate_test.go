package app

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/migrate"
)

// migrateTestdata holds the TrainJob files and goldens of sim/migrate.
const migrateTestdata = "../../../sim/migrate/testdata/"

// runMigrate runs "simctl migrate args..." with stdin as standard input.
func runMigrate(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut}, append([]string{"migrate"}, args...))
	return out.String(), errOut.String(), ExitCode(err)
}

func TestMigratePrintsTheLibrarysOutput(t *testing.T) {
	want, err := os.ReadFile(migrateTestdata + "seed-migration.migrated.yaml")
	if err != nil {
		t.Fatal(err)
	}
	input, err := os.ReadFile(migrateTestdata + "seed-migration.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"file":  {migrateTestdata + "seed-migration.yaml"},
		"stdin": {"-"},
	} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runMigrate(t, string(input), args...)
			if code != ExitOK {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, ExitOK, stderr)
			}
			if diff := cmp.Diff(string(want), stdout); diff != "" {
				t.Errorf("stdout mismatch (-want +got):\n%s", diff)
			}
			if stderr != "" {
				t.Errorf("stderr = %q, want nothing", stderr)
			}
		})
	}
}

func TestMigrateWarnings(t *testing.T) {
	file := migrateTestdata + "warn-unknown-job.yaml"
	want, err := os.ReadFile(migrateTestdata + "warn-unknown-job.migrated.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wantErr := file + ":12:11: warning: spec.podTemplateOverrides[0].targetJobs[1] names job launcher, which the default ClusterTrainingRuntime torch-distributed does not have (it has node): Trainer v2.1.0 rejects the TrainJob, v2.3.0 admits it and adds a replicated job launcher to the JobSet\n"

	stdout, stderr, code := runMigrate(t, "", file)
	if code != ExitOK {
		t.Errorf("exit code %d, want %d: warnings alone do not fail", code, ExitOK)
	}
	if diff := cmp.Diff(wantErr, stderr); diff != "" {
		t.Errorf("stderr mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(string(want), stdout); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}

	// --strict: the same output, exit 1.
	stdout, stderr, code = runMigrate(t, "", "--strict", file)
	if code != ExitFailed {
		t.Errorf("--strict: exit code %d, want %d", code, ExitFailed)
	}
	if diff := cmp.Diff(wantErr+"simctl: 1 warning (--strict)\n", stderr); diff != "" {
		t.Errorf("--strict: stderr mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(string(want), stdout); diff != "" {
		t.Errorf("--strict: stdout mismatch (-want +got):\n%s", diff)
	}
}

func TestMigrateManagerFlag(t *testing.T) {
	stdout, stderr, code := runMigrate(t, "", "--manager", "kueue.x-k8s.io/manager", migrateTestdata+"labels-only.yaml")
	if code != ExitOK {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "- manager: kueue.x-k8s.io/manager\n") {
		t.Errorf("stdout does not have the manager:\n%s", stdout)
	}
}

func TestMigrateUsageErrors(t *testing.T) {
	trainJob := "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: x\nspec:\n  runtimeRef:\n    name: torch-distributed\n"
	for _, tc := range []struct {
		name       string
		stdin      string
		args       []string
		wantStderr string
	}{
		{"no file", "", nil, "simctl: migrate needs exactly one FILE (- for standard input), got 0 arguments\n"},
		{"missing file", "", []string{"/nonexistent/trainjob.yaml"}, "simctl: failed to read /nonexistent/trainjob.yaml: no such file or directory\n"},
		{"not YAML", "a: b\n\tc: d\n", []string{"-"}, "simctl: stdin:2: invalid YAML: found a tab character that violates indentation\n"},
		{"no TrainJob", "", []string{"../../../fixtures/runtimes/torch_distributed.yaml"},
			"simctl: ../../../fixtures/runtimes/torch_distributed.yaml: no TrainJob (apiVersion trainer.kubeflow.org/v1alpha1, kind TrainJob) among its 1 document: nothing to migrate\n"},
		{"already migrated", "", []string{migrateTestdata + "seed-migration.migrated.yaml"},
			"simctl: " + migrateTestdata + "seed-migration.migrated.yaml:12:3: spec.runtimePatches: the TrainJob already uses runtimePatches (Trainer v2.2.0 and later): there is nothing to migrate\n"},
		{"nothing to migrate", trainJob, []string{"-"}, "simctl: stdin:5:1: spec: the TrainJob has no podTemplateOverrides, labels or annotations: there is nothing to migrate\n"},
		{"several problems", trainJob + "---\n" + trainJob, []string{"-"},
			"simctl: 2 problems in stdin:\n" +
				"  stdin:5:1: spec: the TrainJob has no podTemplateOverrides, labels or annotations: there is nothing to migrate\n" +
				"  stdin:13:1: spec: the TrainJob has no podTemplateOverrides, labels or annotations: there is nothing to migrate\n"},
		{"bad manager", "", []string{"--manager", "sdk", migrateTestdata + "labels-only.yaml"},
			`simctl: invalid manager "sdk": manager: Invalid value: "sdk": must be a domain-prefixed path (such as "acme.io/foo")` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runMigrate(t, tc.stdin, tc.args...)
			if code != ExitUsage {
				t.Errorf("exit code %d, want %d", code, ExitUsage)
			}
			if diff := cmp.Diff(tc.wantStderr, stderr); diff != "" {
				t.Errorf("stderr mismatch (-want +got):\n%s", diff)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

// TestMigrateSeedFixture keeps fixtures/migrate/seed-000.migrated.yaml, which
// scenarios/migration/seed-000-after creates, what simctl migrate makes of
// seed-000.yaml, which seed-000-before creates.
func TestMigrateSeedFixture(t *testing.T) {
	want, err := os.ReadFile("../../../fixtures/migrate/seed-000.migrated.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runMigrate(t, "", "../../../fixtures/migrate/seed-000.yaml")
	if code != ExitOK || stderr != "" {
		t.Errorf("exit code %d, stderr %q; want 0 and nothing", code, stderr)
	}
	if diff := cmp.Diff(string(want), stdout); diff != "" {
		t.Errorf("fixtures/migrate/seed-000.migrated.yaml is not what migrate prints (-file +printed):\n%s", diff)
	}
}

// TestMigrateSourceReleaseIsSupported: the release whose default runtimes
// migrate checks target jobs against is the one --verify starts, and it is
// one with podTemplateOverrides.
func TestMigrateSourceReleaseIsSupported(t *testing.T) {
	r, err := sim.LookupTrainer(migrate.SourceRelease)
	if err != nil {
		t.Fatal(err)
	}
	if r.API != sim.APIPodTemplateOverrides {
		t.Errorf("Trainer %s has API %s, want %s", r.Version, r.API, sim.APIPodTemplateOverrides)
	}
}
