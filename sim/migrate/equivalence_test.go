package migrate

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.yaml.in/yaml/v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// The two merges below are copies of the trainer's, so that the tests can
// run a TrainJob the old way and its migration the new way and compare
// what the JobSet gets. v2.1.0's cannot be imported next to v2.3.0's (one
// module path), so both are copied, over the types of v210.go for the old
// one and the real types for the new.

// mergeV210 is mergePodTemplateOverrides of Trainer v2.1.0
// (pkg/runtime/core/trainingruntime.go:190-238), with the propagation of
// spec.labels and spec.annotations of its newRuntimeInfo (lines 126-141).
func mergeV210(t *testing.T, template trainer.JobSetTemplateSpec, spec v210TrainJobSpec) (trainer.JobSetTemplateSpec, map[string]string, map[string]string) {
	t.Helper()
	labels := maps.Clone(template.Labels)
	if labels == nil && spec.Labels != nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, spec.Labels)
	annotations := maps.Clone(template.Annotations)
	if annotations == nil && spec.Annotations != nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, spec.Annotations)
	for _, podTemplateOverride := range spec.PodTemplateOverrides {
		for i, job := range template.Spec.ReplicatedJobs {
			if !slices.ContainsFunc(podTemplateOverride.TargetJobs, func(targetJob podTemplateOverrideTargetJob) bool {
				return targetJob.Name == job.Name
			}) {
				continue
			}
			podTemplatePatch := map[string]any{}
			if podTemplateOverride.Metadata != nil {
				metadata := map[string]any{}
				if podTemplateOverride.Metadata.Labels != nil {
					metadata["labels"] = podTemplateOverride.Metadata.Labels
				}
				if podTemplateOverride.Metadata.Annotations != nil {
					metadata["annotations"] = podTemplateOverride.Metadata.Annotations
				}
				if len(metadata) > 0 {
					podTemplatePatch["metadata"] = metadata
				}
			}
			if podTemplateOverride.Spec != nil {
				podTemplatePatch["spec"] = podTemplateOverride.Spec
			}
			source := mustJSON(t, job.Template.Spec.Template)
			patch := mustJSON(t, podTemplatePatch)
			merged, err := strategicpatch.StrategicMergePatch(source, patch, corev1.PodTemplateSpec{})
			if err != nil {
				t.Fatal(err)
			}
			mergedTemplate := corev1.PodTemplateSpec{}
			if err := json.Unmarshal(merged, &mergedTemplate); err != nil {
				t.Fatal(err)
			}
			template.Spec.ReplicatedJobs[i].Template.Spec.Template = mergedTemplate
		}
	}
	return template, labels, annotations
}

// v210TrainJobSpec is what mergeV210 reads of a v2.1.0 TrainJob's spec.
type v210TrainJobSpec struct {
	Labels               map[string]string     `json:"labels,omitempty"`
	Annotations          map[string]string     `json:"annotations,omitempty"`
	PodTemplateOverrides []podTemplateOverride `json:"podTemplateOverrides,omitempty"`
}

// mergeV230 is mergeRuntimePatches of Trainer v2.3.0
// (pkg/runtime/core/trainingruntime.go:251-290), with the propagation of the
// entries' template metadata of its newRuntimeInfo (lines 144-160).
func mergeV230(t *testing.T, template trainer.JobSetTemplateSpec, trainJob *trainer.TrainJob) (trainer.JobSetTemplateSpec, map[string]string, map[string]string) {
	t.Helper()
	labels := maps.Clone(template.Labels)
	annotations := maps.Clone(template.Annotations)
	for _, patch := range trainJob.Spec.RuntimePatches {
		if patch.TrainingRuntimeSpec != nil && patch.TrainingRuntimeSpec.Template != nil && patch.TrainingRuntimeSpec.Template.Metadata != nil {
			if labels == nil && len(patch.TrainingRuntimeSpec.Template.Metadata.Labels) > 0 {
				labels = map[string]string{}
			}
			maps.Copy(labels, patch.TrainingRuntimeSpec.Template.Metadata.Labels)
			if annotations == nil && len(patch.TrainingRuntimeSpec.Template.Metadata.Annotations) > 0 {
				annotations = map[string]string{}
			}
			maps.Copy(annotations, patch.TrainingRuntimeSpec.Template.Metadata.Annotations)
		}
	}
	order := make(map[string]int, len(template.Spec.ReplicatedJobs))
	for i, rJob := range template.Spec.ReplicatedJobs {
		order[rJob.Name] = i
	}
	for _, runtimePatch := range trainJob.Spec.RuntimePatches {
		if runtimePatch.TrainingRuntimeSpec == nil ||
			runtimePatch.TrainingRuntimeSpec.Template == nil ||
			runtimePatch.TrainingRuntimeSpec.Template.Spec == nil {
			continue
		}
		source := mustJSON(t, template.Spec)
		patch := mustJSON(t, runtimePatch.TrainingRuntimeSpec.Template.Spec)
		merged, err := strategicpatch.StrategicMergePatch(source, patch, jobsetv1alpha2.JobSetSpec{})
		if err != nil {
			t.Fatal(err)
		}
		mergedSpec := jobsetv1alpha2.JobSetSpec{}
		if err := json.Unmarshal(merged, &mergedSpec); err != nil {
			t.Fatal(err)
		}
		template.Spec = mergedSpec
	}
	slices.SortStableFunc(template.Spec.ReplicatedJobs, func(a, b jobsetv1alpha2.ReplicatedJob) int {
		return order[a.Name] - order[b.Name]
	})
	return template, labels, annotations
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testRuntime returns the JobSet template of testdata/runtimes/test-runtime.yaml.
func testRuntime(t *testing.T) trainer.JobSetTemplateSpec {
	t.Helper()
	data, err := os.ReadFile("testdata/runtimes/test-runtime.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rt trainer.TrainingRuntime
	if err := sigsyaml.UnmarshalStrict(data, &rt); err != nil {
		t.Fatal(err)
	}
	return rt.Spec.Template
}

// runBoth runs the TrainJob of file the old way and its migration the new
// way on template, and returns both results (the JobSet template, then its
// labels and annotations).
func runBoth(t *testing.T, file string, template trainer.JobSetTemplateSpec) (before, after []any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := Migrate(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	old := trainJobOf(t, data)
	var oldSpec v210TrainJobSpec
	if err := kjson.UnmarshalCaseSensitivePreserveInts(mustJSON(t, old["spec"]), &oldSpec); err != nil {
		t.Fatal(err)
	}
	// The new TrainJob must be one of Trainer v2.3.0's API, field for field.
	var migrated trainer.TrainJob
	strict, err := kjson.UnmarshalStrict(mustJSON(t, trainJobOf(t, out)), &migrated)
	if err != nil || len(strict) > 0 {
		t.Fatalf("the migrated TrainJob is not one of v2.3.0's API: %v %v", err, strict)
	}
	a, b, c := mergeV210(t, *template.DeepCopy(), oldSpec)
	d, e, f := mergeV230(t, *template.DeepCopy(), &migrated)
	return []any{a, b, c}, []any{d, e, f}
}

// trainJobOf returns the TrainJob document of a YAML stream.
func trainJobOf(t *testing.T, data []byte) map[string]any {
	t.Helper()
	docs, errs := parse("", data)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, doc := range docs {
		if isTrainJob(doc.Content[0]) {
			var m map[string]any
			data, err := yaml.Marshal(doc.Content[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := sigsyaml.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatal("no TrainJob")
	return nil
}

// TestMigrationGivesTheSameJobSet: on a runtime that has something of every
// field, each TrainJob of testdata/ the old way and its migration the new
// way give the same JobSet template, labels and annotations, except where a
// warning says they may not (the next tests).
func TestMigrationGivesTheSameJobSet(t *testing.T) {
	for _, tc := range goldenCases {
		if tc.name == "warn-unknown-job" {
			continue // TestUnknownJob
		}
		t.Run(tc.name, func(t *testing.T) {
			before, after := runBoth(t, "testdata/"+tc.name+".yaml", testRuntime(t))
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("v2.1.0 and v2.3.0 differ (-v2.1.0 +v2.3.0):\n%s", diff)
			}
		})
	}
}

// TestOrderWarning: the items of warn-order.yaml's lists come out as on
// v2.1.0 when the runtime has none of them, and in another order when it
// already has one.
func TestOrderWarning(t *testing.T) {
	rt := testRuntime(t)
	before, after := runBoth(t, "testdata/warn-order.yaml", rt)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("without the items in the runtime, v2.1.0 and v2.3.0 differ (-v2.1.0 +v2.3.0):\n%s", diff)
	}

	sidecar := &rt.Spec.ReplicatedJobs[2].Template.Spec.Template.Spec.Containers[1]
	sidecar.Env = append(sidecar.Env, corev1.EnvVar{Name: "DATA_DIR", Value: "/runtime/data"})
	before, after = runBoth(t, "testdata/warn-order.yaml", rt)
	envOf := func(r []any) []corev1.EnvVar {
		return r[0].(trainer.JobSetTemplateSpec).Spec.ReplicatedJobs[2].Template.Spec.Template.Spec.Containers[1].Env
	}
	wantBefore := []corev1.EnvVar{{Name: "CACHE_DIR", Value: "/workspace/cache"}, {Name: "LOG_LEVEL", Value: "warn"}, {Name: "DATA_DIR", Value: "/data"}}
	wantAfter := []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "warn"}, {Name: "DATA_DIR", Value: "/data"}, {Name: "CACHE_DIR", Value: "/workspace/cache"}}
	if diff := cmp.Diff(wantBefore, envOf(before)); diff != "" {
		t.Errorf("v2.1.0 env mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantAfter, envOf(after)); diff != "" {
		t.Errorf("v2.3.0 env mismatch (-want +got):\n%s", diff)
	}
	byName := cmpopts.SortSlices(func(a, b corev1.EnvVar) bool { return a.Name < b.Name })
	if diff := cmp.Diff(before, after, byName); diff != "" {
		t.Errorf("v2.1.0 and v2.3.0 differ in more than order (-v2.1.0 +v2.3.0):\n%s", diff)
	}
}

// TestUnknownJob: v2.1.0 applies an override to the runtime's jobs only
// (and its webhook rejects the TrainJob); v2.3.0's patch adds the job.
func TestUnknownJob(t *testing.T) {
	rt := testRuntime(t)
	before, after := runBoth(t, "testdata/warn-unknown-job.yaml", rt)
	names := func(r []any) []string {
		var out []string
		for _, j := range r[0].(trainer.JobSetTemplateSpec).Spec.ReplicatedJobs {
			out = append(out, j.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"dataset-initializer", "model-initializer", "node"}, names(before)); diff != "" {
		t.Errorf("v2.1.0 jobs mismatch (-want +got):\n%s", diff)
	}
	// A job the runtime does not have sorts as the runtime's first one
	// (v2.3.0's order map gives it 0), after it where the merge put it.
	if diff := cmp.Diff([]string{"dataset-initializer", "launcher", "model-initializer", "node"}, names(after)); diff != "" {
		t.Errorf("v2.3.0 jobs mismatch (-want +got):\n%s", diff)
	}
}

// TestOrderWarningProperty: for random env lists of container trainer in
// two or three overrides and in the runtime, the migration gives v2.1.0's
// env exactly unless an Order warning says it may not, and then the same
// variables in another order; and exactly when the runtime has none of the
// overrides' variables.
func TestOrderWarningProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"A", "B", "C", "D", "E"}
	pick := func(n int) []string {
		p := slices.Clone(names)
		r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		return p[:n]
	}
	warned := 0
	for i := range 200 {
		var b strings.Builder
		b.WriteString("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: p\nspec:\n  runtimeRef:\n    name: test-runtime\n    kind: TrainingRuntime\n  podTemplateOverrides:\n")
		seen := map[string]bool{}
		for k := range 2 + r.IntN(2) {
			fmt.Fprintf(&b, "    - targetJobs: [{name: node}]\n      spec:\n        containers:\n          - name: trainer\n            env:\n")
			// Sometimes the same keys as the one before, in the same order.
			for _, n := range pick(1 + r.IntN(3)) {
				fmt.Fprintf(&b, "              - {name: %s, value: o%d}\n", n, k)
				seen[n] = true
			}
		}
		rt := testRuntime(t)
		sidecar := &rt.Spec.ReplicatedJobs[2].Template.Spec.Template.Spec.Containers[1]
		runtimeHasOne := false
		sidecar.Env = nil
		for _, n := range pick(r.IntN(4)) {
			sidecar.Env = append(sidecar.Env, corev1.EnvVar{Name: n, Value: "runtime"})
			runtimeHasOne = runtimeHasOne || seen[n]
		}
		file := filepath.Join(t.TempDir(), fmt.Sprintf("p%d.yaml", i))
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		_, warnings, err := Migrate([]byte(b.String()), Options{})
		if err != nil {
			t.Fatal(err)
		}
		before, after := runBoth(t, file, rt)
		exact := cmp.Equal(before, after)
		switch {
		case len(warnings) == 0 && !exact:
			t.Errorf("no warning, yet v2.1.0 and v2.3.0 differ for\n%s\nruntime env %v:\n%s", b.String(), sidecar.Env, cmp.Diff(before, after))
		case !runtimeHasOne && !exact:
			t.Errorf("the runtime has none of the items, yet v2.1.0 and v2.3.0 differ for\n%s\n%s", b.String(), cmp.Diff(before, after))
		case len(warnings) > 0:
			warned++
			byName := cmpopts.SortSlices(func(a, b corev1.EnvVar) bool { return a.Name < b.Name })
			if diff := cmp.Diff(before, after, byName); diff != "" {
				t.Errorf("v2.1.0 and v2.3.0 differ in more than order for\n%s\n%s", b.String(), diff)
			}
		}
	}
	if warned == 0 {
		t.Error("no case gave a warning")
	}
}
