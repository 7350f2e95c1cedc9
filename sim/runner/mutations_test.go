package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
)

// obj decodes a YAML object as the server's answer would be decoded.
func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatalf("failed to decode test object: %v", err)
	}
	return m
}

// sending is the prepared write of a verb (by name) that sends body (YAML;
// "" for nothing).
func sending(t *testing.T, verb, patchType, body string) *prepared {
	t.Helper()
	v, ok := v1alpha1.LookupVerb(verb)
	if !ok {
		t.Fatalf("no verb %s", verb)
	}
	p := &prepared{verb: v, write: results.Write{PatchType: patchType}}
	if body != "" {
		if err := yaml.Unmarshal([]byte(body), &p.sent); err != nil {
			t.Fatalf("failed to decode test body: %v", err)
		}
	}
	return p
}

func TestMutations(t *testing.T) {
	const sdk = "spec.runtimePatches[manager=trainer.kubeflow.org/kubeflow-sdk]"
	const kueue = "spec.runtimePatches[manager=kueue.x-k8s.io/manager]"
	for _, tc := range []struct {
		name      string
		verb      string
		patchType string
		body      string
		stored    string
		want      []results.FieldChange
	}{
		{
			name: "create compares the whole object but status and server metadata",
			verb: "create",
			body: `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: llm, namespace: ns, labels: {team: ml}}
spec:
  suspend: true
  runtimePatches:
  - manager: trainer.kubeflow.org/kubeflow-sdk
    trainingRuntimeSpec: {template: {metadata: {labels: {a: b}}}}
`,
			stored: `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: llm
  namespace: ns
  labels: {team: ml}
  uid: 6b1c
  resourceVersion: "1021"
  generation: 1
  creationTimestamp: "2026-03-14T09:26:53Z"
  managedFields: [{manager: kubectl-create}]
spec:
  managedBy: trainer.kubeflow.org/trainjob-controller
  suspend: true
  runtimePatches:
  - manager: trainer.kubeflow.org/kubeflow-sdk
    time: "2026-03-14T09:26:53Z"
    trainingRuntimeSpec: {template: {metadata: {labels: {a: b}}}}
status: {conditions: [{type: Suspended, status: "True"}]}
`,
			want: []results.FieldChange{
				{Path: "spec.managedBy", Kind: "added", Stored: `"trainer.kubeflow.org/trainjob-controller"`},
				{Path: sdk + ".time", Kind: "added", Stored: `"2026-03-14T09:26:53Z"`},
			},
		},
		{
			name: "update: server metadata sent back is ignored; added, changed and removed both ways",
			verb: "update",
			body: `
metadata: {name: llm, resourceVersion: "2040", managedFields: [{manager: x}], annotations: {note: touched}}
spec:
  numNodes: 4
  unknownField: dropped
  tolerations: [{key: a}]
  runtimePatches:
  - {manager: trainer.kubeflow.org/kubeflow-sdk, time: "2030-01-01T00:00:00Z"}
status: {anything: sent}
`,
			stored: `
metadata: {name: llm, resourceVersion: "2041", annotations: {note: touched}}
spec:
  numNodes: 4.0
  tolerations: [{key: a}, {key: b}]
  runtimePatches:
  - {manager: trainer.kubeflow.org/kubeflow-sdk, time: "2020-01-01T00:00:00Z"}
  - {manager: kueue.x-k8s.io/manager, time: "2020-01-01T00:00:00Z"}
`,
			want: []results.FieldChange{
				{Path: kueue, Kind: "added", Stored: `{"manager":"kueue.x-k8s.io/manager","time":"2020-01-01T00:00:00Z"}`},
				{Path: sdk + ".time", Kind: "changed", Sent: `"2030-01-01T00:00:00Z"`, Stored: `"2020-01-01T00:00:00Z"`},
				{Path: "spec.tolerations[1]", Kind: "added", Stored: `{"key":"b"}`},
				{Path: "spec.unknownField", Kind: "removed", Sent: `"dropped"`},
			},
		},
		{
			name: "apply compares the leaves sent and the keys added to a keyed item sent",
			verb: "apply", patchType: "apply",
			body: `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: llm}
spec:
  runtimePatches:
  - manager: kueue.x-k8s.io/manager
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template: {spec: {template: {spec: {nodeSelector: {pool: a}, tolerations: [{key: nvidia.com/gpu, operator: Exists}]}}}}
`,
			stored: `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: llm, namespace: ns, annotations: {other: manager}}
spec:
  suspend: true
  runtimePatches:
  - manager: trainer.kubeflow.org/kubeflow-sdk
    time: "2026-03-14T09:26:53Z"
  - manager: kueue.x-k8s.io/manager
    time: "2026-03-14T09:26:54Z"
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template: {spec: {template: {spec: {nodeSelector: {pool: b, zone: x}, tolerations: [{key: nvidia.com/gpu, operator: Exists}, {key: other}]}}}}
`,
			want: []results.FieldChange{
				{Path: kueue + ".time", Kind: "added", Stored: `"2026-03-14T09:26:54Z"`},
				{Path: kueue + ".trainingRuntimeSpec.template.spec.replicatedJobs[name=node].template.spec.template.spec.nodeSelector.pool", Kind: "changed", Sent: `"a"`, Stored: `"b"`},
			},
		},
		{
			name: "merge patch: the webhook puts the old time back; null asks for no field",
			verb: "patch", patchType: "merge",
			body: `
metadata: {resourceVersion: "7", annotations: {gone: null, kept: null}}
spec:
  suspend: false
  runtimePatches:
  - {manager: trainer.kubeflow.org/kubeflow-sdk, time: "2030-01-01T00:00:00Z"}
`,
			stored: `
metadata: {resourceVersion: "8", annotations: {kept: "yes"}}
spec:
  suspend: false
  runtimePatches:
  - {manager: trainer.kubeflow.org/kubeflow-sdk, time: "2020-01-01T00:00:00Z"}
`,
			want: []results.FieldChange{
				{Path: "metadata.annotations.kept", Kind: "changed", Sent: "null", Stored: `"yes"`},
				{Path: sdk + ".time", Kind: "changed", Sent: `"2030-01-01T00:00:00Z"`, Stored: `"2020-01-01T00:00:00Z"`},
			},
		},
		{
			name: "merge patch: a value of another type",
			verb: "patch", patchType: "merge",
			body:   `{spec: {trainer: {args: [a]}, labels: {a: b}}}`,
			stored: `{spec: {trainer: {args: {a: b}}}}`,
			want: []results.FieldChange{
				{Path: "spec.labels", Kind: "removed", Sent: `{"a":"b"}`},
				{Path: "spec.trainer.args", Kind: "changed", Sent: `["a"]`, Stored: `{"a":"b"}`},
			},
		},
		{
			name: "json patch: add and replace values are compared at their paths",
			verb: "patch", patchType: "json",
			body: `
- {op: test, path: /spec/runtimePatches/0/time, value: "1999-01-01T00:00:00Z"}
- {op: add, path: /spec/runtimePatches/-, value: {manager: kueue.x-k8s.io/manager}}
- {op: replace, path: /spec/runtimePatches/0/time, value: "2030-01-01T00:00:00Z"}
- {op: replace, path: /spec/trainer/args/1, value: "--b"}
- {op: add, path: /metadata/annotations/a~1b, value: x}
- {op: add, path: /spec/missing/deeper, value: 1}
- {op: replace, path: /status/x, value: 1}
- {op: remove, path: /spec/suspend}
`,
			stored: `
metadata: {annotations: {a/b: x}}
spec:
  trainer: {args: ["--a", "--c"]}
  runtimePatches:
  - {manager: trainer.kubeflow.org/kubeflow-sdk, time: "2020-01-01T00:00:00Z"}
  - {manager: kueue.x-k8s.io/manager, time: "2026-03-14T09:26:54Z"}
status: {x: 2}
`,
			want: []results.FieldChange{
				{Path: "spec.missing.deeper", Kind: "removed", Sent: "1"},
				{Path: kueue + ".time", Kind: "added", Stored: `"2026-03-14T09:26:54Z"`},
				{Path: sdk + ".time", Kind: "changed", Sent: `"2030-01-01T00:00:00Z"`, Stored: `"2020-01-01T00:00:00Z"`},
				{Path: "spec.trainer.args[1]", Kind: "changed", Sent: `"--b"`, Stored: `"--c"`},
			},
		},
		{
			name: "map keys with dots and item keys with brackets are quoted, as fieldpath prints them",
			verb: "patch", patchType: "merge",
			body:   `{metadata: {labels: {kueue.x-k8s.io/queue-name: a}}, spec: {runtimePatches: [{manager: "example.com/a]b"}], trainer: {resourcesPerNode: {limits: {nvidia.com/gpu: "8"}}}}}`,
			stored: `{metadata: {labels: {kueue.x-k8s.io/queue-name: b}}, spec: {runtimePatches: [{manager: "example.com/a]b", time: "2020-01-01T00:00:00Z"}], trainer: {resourcesPerNode: {limits: {nvidia.com/gpu: "4"}}}}}`,
			want: []results.FieldChange{
				{Path: `metadata.labels["kueue.x-k8s.io/queue-name"]`, Kind: "changed", Sent: `"a"`, Stored: `"b"`},
				{Path: `spec.runtimePatches[manager="example.com/a]b"].time`, Kind: "added", Stored: `"2020-01-01T00:00:00Z"`},
				{Path: `spec.trainer.resourcesPerNode.limits["nvidia.com/gpu"]`, Kind: "changed", Sent: `"8"`, Stored: `"4"`},
			},
		},
		{
			name:   "items without their merge key are matched by index",
			verb:   "create",
			body:   `{spec: {containers: [{image: a}, {name: b}]}}`,
			stored: `{spec: {containers: [{image: a, imagePullPolicy: Always}, {name: b}]}}`,
			want: []results.FieldChange{
				{Path: "spec.containers[0].imagePullPolicy", Kind: "added", Stored: `"Always"`},
			},
		},
		{
			name: "nothing changed",
			verb: "apply", patchType: "apply",
			body:   `{spec: {suspend: true, runtimePatches: [{manager: m, time: "2020-01-01T00:00:00Z"}]}}`,
			stored: `{spec: {suspend: true, runtimePatches: [{manager: m, time: "2020-01-01T00:00:00Z"}]}}`,
		},
		{
			name: "delete and get send no object",
			verb: "delete", body: "", stored: `{metadata: {name: llm}}`,
		},
		{
			name: "get",
			verb: "get", stored: `{metadata: {name: llm}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mutations(sending(t, tc.verb, tc.patchType, tc.body), obj(t, tc.stored))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mutations mismatch (-want +got):\n%s", diff)
			}
			for _, c := range got {
				// A report's path is one an owners or exact path can use.
				if p, err := fieldpath.Parse(c.Path); err != nil || p.String() != c.Path {
					t.Errorf("path %s does not read back as itself: %v, %v", c.Path, p, err)
				}
			}
		})
	}
}
