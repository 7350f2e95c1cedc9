package migrate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v4"

	"github.com/trainersim/trainersim/internal/golden"
)

// goldenCases are the TrainJob files of testdata/ with the warnings each
// gives, every field; the migrated output of NAME.yaml is
// NAME.migrated.yaml.
var goldenCases = []struct {
	name     string
	warnings []Warning // File is the input's
}{
	{name: "seed-migration"},
	{name: "fold-same-job"},
	{name: "two-target-jobs"},
	{name: "metadata"},
	{name: "labels-only"},
	{name: "several-documents"},
	{name: "warn-order", warnings: []Warning{
		{Reason: Order, Line: 29, Column: 11, TrainJob: "warn-order", Overrides: []int{0, 1}, Jobs: []string{"node"}, Field: "spec.volumes",
			Message: "spec.podTemplateOverrides[0] and [1] both set spec.volumes of job node with different items: Trainer v2.1.0 merges them one after the other, the runtimePatches entry all at once, so if the runtime already has one of these items their order in the Pod can differ"},
		{Reason: Order, Line: 34, Column: 15, TrainJob: "warn-order", Overrides: []int{0, 1}, Jobs: []string{"node"}, Field: "spec.containers[name=trainer].env",
			Message: "spec.podTemplateOverrides[0] and [1] both set spec.containers[name=trainer].env of job node with different items: Trainer v2.1.0 merges them one after the other, the runtimePatches entry all at once, so if the runtime already has one of these items their order in the Pod can differ"},
	}},
	{name: "warn-dropped", warnings: []Warning{
		{Reason: Dropped, Line: 15, Column: 9, TrainJob: "warn-dropped", Overrides: []int{0}, Jobs: []string{"node"}, Field: "metadata.finalizers",
			Message: "spec.podTemplateOverrides[0].metadata.finalizers (job node): Trainer v2.1.0 applies only the labels and annotations of an override's metadata: left out, because v2.3.0 would patch it into the Pod template"},
		{Reason: Dropped, Line: 20, Column: 9, TrainJob: "warn-dropped", Overrides: []int{0}, Jobs: []string{"node"}, Field: "spec.securityContext",
			Message: "spec.podTemplateOverrides[0].spec.securityContext (job node) is not in Trainer v2.1.0's API, so v2.1.0 never applied it: left out, because v2.3.0 would apply it"},
		{Reason: Dropped, Line: 22, Column: 9, TrainJob: "warn-dropped", Overrides: []int{0}, Jobs: []string{"node"}, Field: "spec.priorityClassName",
			Message: "spec.podTemplateOverrides[0].spec.priorityClassName (job node) is not in Trainer v2.1.0's API, so v2.1.0 never applied it: left out"},
		{Reason: Dropped, Line: 25, Column: 13, TrainJob: "warn-dropped", Overrides: []int{0}, Jobs: []string{"node"}, Field: "spec.containers[name=trainer].image",
			Message: "spec.podTemplateOverrides[0].spec.containers[name=trainer].image (job node) is not in Trainer v2.1.0's API, so v2.1.0 never applied it: left out"},
		{Reason: Dropped, Line: 26, Column: 13, TrainJob: "warn-dropped", Overrides: []int{0}, Jobs: []string{"node"}, Field: "spec.containers[name=trainer].securityContext",
			Message: "spec.podTemplateOverrides[0].spec.containers[name=trainer].securityContext (job node) is not in Trainer v2.1.0's API, so v2.1.0 never applied it: left out, because v2.3.0 would apply it"},
		{Reason: Dropped, Line: 31, Column: 19, TrainJob: "warn-dropped", Overrides: []int{1}, Field: "targetJobs",
			Message: "spec.podTemplateOverrides[1].targetJobs is empty, so Trainer v2.1.0 applied the override to no job: left out"},
	}},
	{name: "warn-unknown-job", warnings: []Warning{
		{Reason: UnknownJob, Line: 12, Column: 11, TrainJob: "warn-unknown-job", Overrides: []int{0}, Jobs: []string{"launcher"}, Field: "targetJobs[1]",
			Message: "spec.podTemplateOverrides[0].targetJobs[1] names job launcher, which the default ClusterTrainingRuntime torch-distributed does not have (it has node): Trainer v2.1.0 rejects the TrainJob, v2.3.0 admits it and adds a replicated job launcher to the JobSet"},
	}},
}

func TestMigrateGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			in := "testdata/" + tc.name + ".yaml"
			covered[in] = true
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out, warnings, err := Migrate(data, Options{File: in})
			if err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			for i := range tc.warnings {
				tc.warnings[i].File = in
			}
			if diff := cmp.Diff(tc.warnings, warnings); diff != "" {
				t.Errorf("warnings mismatch (-want +got):\n%s", diff)
			}
			golden.Check(t, "testdata/"+tc.name+".migrated.yaml", out)

			// The output is stable: migrating it again is refused, as a
			// TrainJob that already has runtimePatches.
			if _, _, err := Migrate(out, Options{}); err == nil || !strings.Contains(err.Error(), "already uses runtimePatches") {
				t.Errorf("migrating the output again: err = %v, want already uses runtimePatches", err)
			}
		})
	}
	for _, in := range inputs {
		if !strings.HasSuffix(in, ".migrated.yaml") && !covered[in] {
			t.Errorf("%s is not in goldenCases", in)
		}
	}
}

// seedAfter is the "After (RuntimePatches)" of the RuntimePatches guide's
// "Migration from PodTemplateOverrides" (seed 000), indented as YAML.
const seedAfter = `spec:
  runtimePatches:
    - manager: trainer.kubeflow.org/kubeflow-sdk
      trainingRuntimeSpec:
        template:
          spec:
            replicatedJobs:
              - name: node
                template:
                  spec:
                    template:
                      spec:
                        serviceAccountName: ml-training-sa
                        nodeSelector:
                          accelerator: nvidia-tesla-v100
                        volumes:
                          - name: training-data
                            persistentVolumeClaim:
                              claimName: ml-team-training-pvc
                        containers:
                          - name: trainer
                            volumeMounts:
                              - name: training-data
                                mountPath: /workspace/data
`

// TestSeedMigrationIsTheGuidesAfter: the guide's "Before" becomes exactly
// its "After", key order included.
func TestSeedMigrationIsTheGuidesAfter(t *testing.T) {
	data, err := os.ReadFile("testdata/seed-migration.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, warnings, err := Migrate(data, Options{})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Migrate: warnings %v, err %v", warnings, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	_, spec := lookup(doc.Content[0], "spec")
	k, v := lookup(spec, "runtimePatches")
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(mapping(str("spec"), mapping(k, v))); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seedAfter, b.String()); diff != "" {
		t.Errorf("spec.runtimePatches mismatch (-want +got):\n%s", diff)
	}
}

func TestMigrateManager(t *testing.T) {
	data, err := os.ReadFile("testdata/labels-only.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := Migrate(data, Options{Manager: "kueue.x-k8s.io/manager"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "- manager: kueue.x-k8s.io/manager\n") {
		t.Errorf("output does not have the manager:\n%s", out)
	}
}

// trainJobHead is the start of a TrainJob document, for the error cases.
const trainJobHead = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: bad
spec:
  runtimeRef:
    name: torch-distributed
`

func TestMigrateErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		manager string
		want    string
	}{
		{name: "not YAML", input: "a: b\n\tc: d\n",
			want: "in.yaml:2:1: invalid YAML: found a tab character that violates indentation"},
		{name: "not an object", input: "hello world\n",
			want: "in.yaml:1:1: document 1 is string \"hello world\", not a Kubernetes object"},
		{name: "empty", input: "",
			want: "in.yaml: no TrainJob (apiVersion trainer.kubeflow.org/v1alpha1, kind TrainJob) among its 0 documents: nothing to migrate"},
		{name: "no TrainJob", input: "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: kubeflow.org/v1\nkind: TrainJob\n",
			want: "in.yaml: no TrainJob (apiVersion trainer.kubeflow.org/v1alpha1, kind TrainJob) among its 2 documents: nothing to migrate"},
		{name: "already migrated", input: trainJobHead + "  runtimePatches:\n    - manager: a.io/b\n",
			want: "in.yaml:8:3: spec.runtimePatches: the TrainJob already uses runtimePatches (Trainer v2.2.0 and later): there is nothing to migrate"},
		{name: "both fields", input: trainJobHead + "  podTemplateOverrides: []\n  runtimePatches: []\n",
			want: "in.yaml:9:3: spec.runtimePatches: the TrainJob already uses runtimePatches (Trainer v2.2.0 and later): there is nothing to migrate"},
		{name: "nothing to migrate", input: trainJobHead,
			want: "in.yaml:5:1: spec: the TrainJob has no podTemplateOverrides, labels or annotations: there is nothing to migrate"},
		{name: "no spec", input: "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n",
			want: "in.yaml:1:1: spec: the TrainJob has no spec: there is nothing to migrate"},
		{name: "spec not an object", input: "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nspec: [a]\n",
			want: "in.yaml:3:7: spec: expected an object, found a list"},
		{name: "overrides not a list", input: trainJobHead + "  podTemplateOverrides:\n    targetJobs: []\n",
			want: "in.yaml:9:5: spec.podTemplateOverrides: expected a list of overrides, found a mapping"},
		{name: "override not an object", input: trainJobHead + "  podTemplateOverrides:\n    - node\n",
			want: "in.yaml:9:7: spec.podTemplateOverrides[0]: expected an override (an object), found string \"node\""},
		{name: "no targetJobs", input: trainJobHead + "  podTemplateOverrides:\n    - spec:\n        serviceAccountName: sa\n",
			want: "in.yaml:9:7: spec.podTemplateOverrides[0].targetJobs: required: the names of the runtime's jobs to apply the override to"},
		{name: "target job without a name", input: trainJobHead + "  podTemplateOverrides:\n    - targetJobs:\n        - name: node\n        - {}\n",
			want: "in.yaml:11:11: spec.podTemplateOverrides[0].targetJobs[1].name: required: the name of a job of the runtime"},
		{name: "wrong type", input: trainJobHead + "  podTemplateOverrides:\n    - targetJobs: [{name: node}]\n      spec:\n        nodeSelector: [a]\n",
			want: "in.yaml:9:7: spec.podTemplateOverrides[0].spec.nodeSelector: expected map[string]string, found a JSON array"},
		{name: "label not a string", input: trainJobHead + "  labels:\n    replicas: 2\n",
			want: "in.yaml:9:15: spec.labels.replicas: expected a string, found integer 2"},
		{name: "invalid manager", input: trainJobHead + "  labels:\n    a: b\n", manager: "kueue",
			want: `invalid manager "kueue": manager: Invalid value: "kueue": must be a domain-prefixed path (such as "acme.io/foo")`},
		{name: "every TrainJob's problems", input: trainJobHead + "---\n" + trainJobHead + "  runtimePatches: []\n",
			want: "in.yaml:5:1: spec: the TrainJob has no podTemplateOverrides, labels or annotations: there is nothing to migrate\n" +
				"in.yaml:16:3: spec.runtimePatches: the TrainJob already uses runtimePatches (Trainer v2.2.0 and later): there is nothing to migrate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, warnings, err := Migrate([]byte(tc.input), Options{File: "in.yaml", Manager: tc.manager})
			if err == nil {
				t.Fatalf("no error; output:\n%s", out)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if out != nil || warnings != nil {
				t.Errorf("output %q and warnings %v with an error", out, warnings)
			}
		})
	}
}

// TestMigrateRemovesOverridesThatDoNothing: overrides that patch nothing go
// without an entry in their place.
func TestMigrateRemovesOverridesThatDoNothing(t *testing.T) {
	want := trainJobHead + "  suspend: true\n"
	for name, overrides := range map[string]string{
		"empty list":    "  podTemplateOverrides: []\n",
		"no target job": "  podTemplateOverrides:\n    - targetJobs: []\n",
		"null":          "  podTemplateOverrides:\n",
	} {
		t.Run(name, func(t *testing.T) {
			out, _, err := Migrate([]byte(trainJobHead+overrides+"  suspend: true\n"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, string(out)); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultRuntimesAreV210s: the jobs Migrate checks target jobs against
// are those of Trainer v2.1.0's default runtimes, not v2.3.0's
// (jax-distributed is newer; deepspeed-distributed had its jobs in another
// order, which the warning lists).
func TestDefaultRuntimesAreV210s(t *testing.T) {
	r, err := defaultRuntimes()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r["ClusterTrainingRuntime/jax-distributed"]; ok {
		t.Error("jax-distributed, which v2.1.0 does not have, is among the default runtimes")
	}
	got := r["ClusterTrainingRuntime/deepspeed-distributed"].jobs
	if diff := cmp.Diff([]string{"launcher", "node"}, got); diff != "" {
		t.Errorf("jobs of deepspeed-distributed mismatch (-want +got):\n%s", diff)
	}
}

func TestReadRuntimesErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{name: "no directory", fsys: fstest.MapFS{},
			want: "failed to read Trainer v2.1.0's default runtimes: open runtimes: file does not exist"},
		{name: "not YAML", fsys: fstest.MapFS{"runtimes/a.yaml": {Data: []byte("a: b\n\tc: d\n")}},
			want: "failed to decode runtimes/a.yaml: yaml: line 2: found a tab character that violates indentation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readRuntimes(tc.fsys, "runtimes")
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v, want %s", err, tc.want)
			}
		})
	}
}

// TestParsePath: the paths of sigs.k8s.io/json's strict errors, names with
// characters fieldpath.Parse would want quoted included.
func TestParsePath(t *testing.T) {
	for in, want := range map[string][]pathSegment{
		"spec.containers[0].securityContext": {{name: "spec", index: -1}, {name: "containers", index: -1}, {index: 0}, {name: "securityContext", index: -1}},
		"spec.foo bar":                       {{name: "spec", index: -1}, {name: "foo bar", index: -1}},
		"spec.x=y":                           {{name: "spec", index: -1}, {name: "x=y", index: -1}},
		"spec.containers[1].odd]":            {{name: "spec", index: -1}, {name: "containers", index: -1}, {index: 1}, {name: "odd]", index: -1}},
	} {
		if diff := cmp.Diff(want, parsePath(in), cmp.AllowUnexported(pathSegment{})); diff != "" {
			t.Errorf("parsePath(%q) mismatch (-want +got):\n%s", in, diff)
		}
	}
}
