package app

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/migrate"
	"github.com/trainersim/trainersim/sim/releases"
)

// migrateTestdata holds the TrainJob files and goldens of sim/migrate.
const migrateTestdata = "../../../sim/migrate/testdata/"

// TestMigrate runs simctl migrate and compares its exit code, its standard
// output with a file (none: nothing printed) and its standard error.
func TestMigrate(t *testing.T) {
	seed, err := os.ReadFile(migrateTestdata + "seed-migration.yaml")
	if err != nil {
		t.Fatal(err)
	}
	trainJob := "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: x\nspec:\n  runtimeRef:\n    name: torch-distributed\n"
	unknownJob := migrateTestdata + "warn-unknown-job.yaml"
	unknownJobWarning := unknownJob + ":12:11: warning: spec.podTemplateOverrides[0].targetJobs[1] names job launcher, which the default ClusterTrainingRuntime torch-distributed does not have (it has node): Trainer v2.1.0 rejects the TrainJob, v2.3.0 admits it and adds a replicated job launcher to the JobSet\n"
	for _, tc := range []struct {
		name       string
		stdin      string
		args       []string
		code       int
		stdoutFile string
		stderr     string
	}{
		{name: "file", args: []string{migrateTestdata + "seed-migration.yaml"},
			stdoutFile: migrateTestdata + "seed-migration.migrated.yaml"},
		{name: "stdin", stdin: string(seed), args: []string{"-"},
			stdoutFile: migrateTestdata + "seed-migration.migrated.yaml"},
		// fixtures/migrate/seed-000.migrated.yaml, which
		// scenarios/migration/seed-000-after creates, is what simctl migrate
		// makes of seed-000.yaml, which seed-000-before creates.
		{name: "seed fixture", args: []string{"../../../fixtures/migrate/seed-000.yaml"},
			stdoutFile: "../../../fixtures/migrate/seed-000.migrated.yaml"},
		{name: "warnings alone do not fail", args: []string{unknownJob},
			stdoutFile: migrateTestdata + "warn-unknown-job.migrated.yaml", stderr: unknownJobWarning},
		{name: "--strict: the same output, exit 1", args: []string{"--strict", unknownJob}, code: ExitFailed,
			stdoutFile: migrateTestdata + "warn-unknown-job.migrated.yaml", stderr: unknownJobWarning + "simctl: 1 warning (--strict)\n"},

		{name: "no file", code: ExitUsage,
			stderr: "simctl: migrate needs exactly one FILE (- for standard input), got 0 arguments\n"},
		{name: "missing file", args: []string{"/nonexistent/trainjob.yaml"}, code: ExitUsage,
			stderr: "simctl: failed to read /nonexistent/trainjob.yaml: no such file or directory\n"},
		{name: "not YAML", stdin: "a: b\n\tc: d\n", args: []string{"-"}, code: ExitUsage,
			stderr: "simctl: stdin:2:1: invalid YAML: found a tab character that violates indentation\n"},
		{name: "no TrainJob", args: []string{"../../../fixtures/runtimes/torch_distributed.yaml"}, code: ExitUsage,
			stderr: "simctl: ../../../fixtures/runtimes/torch_distributed.yaml: no TrainJob (apiVersion trainer.kubeflow.org/v1alpha1, kind TrainJob) among its 1 document: nothing to migrate\n"},
		{name: "already migrated", args: []string{migrateTestdata + "seed-migration.migrated.yaml"}, code: ExitUsage,
			stderr: "simctl: " + migrateTestdata + "seed-migration.migrated.yaml:12:3: spec.runtimePatches: the TrainJob already uses runtimePatches (Trainer v2.2.0 and later): there is nothing to migrate\n"},
		{name: "nothing to migrate", stdin: trainJob, args: []string{"-"}, code: ExitUsage,
			stderr: "simctl: stdin:5:1: spec: the TrainJob has no podTemplateOverrides, labels or annotations: there is nothing to migrate\n"},
		{name: "several problems", stdin: trainJob + "---\n" + trainJob, args: []string{"-"}, code: ExitUsage,
			stderr: "simctl: 2 problems in stdin:\n" +
				"  stdin:5:1: spec: the TrainJob has no podTemplateOverrides, labels or annotations: there is nothing to migrate\n" +
				"  stdin:13:1: spec: the TrainJob has no podTemplateOverrides, labels or annotations: there is nothing to migrate\n"},
		{name: "bad manager", args: []string{"--manager", "sdk", migrateTestdata + "labels-only.yaml"}, code: ExitUsage,
			stderr: `simctl: invalid manager "sdk": manager: Invalid value: "sdk": must be a domain-prefixed path (such as "acme.io/foo")` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []byte
			if tc.stdoutFile != "" {
				var err error
				if want, err = os.ReadFile(tc.stdoutFile); err != nil {
					t.Fatal(err)
				}
			}
			stdout, stderr, code := runWithStdin(t, tc.stdin, append([]string{"migrate"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if diff := cmp.Diff(string(want), stdout); diff != "" {
				t.Errorf("stdout mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.stderr, stderr); diff != "" {
				t.Errorf("stderr mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMigrateManagerFlag(t *testing.T) {
	stdout, stderr, code := run(t, "migrate", "--manager", "kueue.x-k8s.io/manager", migrateTestdata+"labels-only.yaml")
	if code != ExitOK {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "- manager: kueue.x-k8s.io/manager\n") {
		t.Errorf("stdout does not have the manager:\n%s", stdout)
	}
}

// TestMigrateSourceReleaseIsSupported: the release whose default runtimes
// migrate checks target jobs against is the one --verify starts, and it is
// one with podTemplateOverrides.
func TestMigrateSourceReleaseIsSupported(t *testing.T) {
	r, err := releases.LookupTrainer(migrate.SourceRelease)
	if err != nil {
		t.Fatal(err)
	}
	if !v1alpha1.HasTrainJobField(r.Version, "spec.podTemplateOverrides") {
		t.Errorf("Trainer %s has no spec.podTemplateOverrides", r.Version)
	}
}
