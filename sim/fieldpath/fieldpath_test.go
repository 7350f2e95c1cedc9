package fieldpath

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Path
		wantErr string
	}{
		{in: "spec", want: Path{"f:spec"}},
		{in: "spec.suspend", want: Path{"f:spec", "f:suspend"}},
		{
			in:   "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec",
			want: Path{"f:spec", "f:runtimePatches", `k:{"manager":"kueue.x-k8s.io/manager"}`, "f:trainingRuntimeSpec"},
		},
		{
			in:   "spec.runtimePatches[manager=kueue.x-k8s.io/manager]",
			want: Path{"f:spec", "f:runtimePatches", `k:{"manager":"kueue.x-k8s.io/manager"}`},
		},
		{
			// Key fields are sorted by name, as the API server writes them.
			in:   "spec.ports[protocol=TCP,port=80]",
			want: Path{"f:spec", "f:ports", `k:{"port":"80","protocol":"TCP"}`},
		},
		{
			in:   "a[k=x][k=y].b",
			want: Path{"f:a", `k:{"k":"x"}`, `k:{"k":"y"}`, "f:b"},
		},
		{
			// A field name with dots, such as a label key, is quoted.
			in:   `spec.template.spec.nodeSelector["node.kubernetes.io/instance-type"]`,
			want: Path{"f:spec", "f:template", "f:spec", "f:nodeSelector", "f:node.kubernetes.io/instance-type"},
		},
		{
			in:   `metadata.labels["a.b/c"].x[k=v]`,
			want: Path{"f:metadata", "f:labels", "f:a.b/c", "f:x", `k:{"k":"v"}`},
		},
		{in: `spec.nodeSelector["a.b`, wantErr: `invalid path "spec.nodeSelector[\"a.b": unterminated quoted field name at "a.b`},
		{in: `spec.nodeSelector["a.b"`, wantErr: `invalid path "spec.nodeSelector[\"a.b\"": expected ] after the quoted field name "a.b"`},
		{in: `spec.nodeSelector[""]`, wantErr: `invalid path "spec.nodeSelector[\"\"]": invalid quoted field name ""`},
		{in: "", wantErr: "empty path"},
		{in: "spec..suspend", wantErr: `invalid path "spec..suspend": empty field name`},
		{in: ".spec", wantErr: `invalid path ".spec": empty field name`},
		{in: "spec.", wantErr: `invalid path "spec.": empty field name`},
		{in: "spec.runtimePatches[manager=x", wantErr: `invalid path "spec.runtimePatches[manager=x": missing ]`},
		{in: "spec.runtimePatches[]", wantErr: `invalid path "spec.runtimePatches[]": empty item selector []: want [key=value]`},
		{in: "spec.runtimePatches[manager]", wantErr: `invalid path "spec.runtimePatches[manager]": item selector "manager": want key=value`},
		{in: "spec.runtimePatches[manager=]", wantErr: `invalid path "spec.runtimePatches[manager=]": item selector "manager=": empty value`},
		{in: "spec.runtimePatches[a=x,a=y]", wantErr: `invalid path "spec.runtimePatches[a=x,a=y]": item selector [a=x,a=y]: key "a" twice`},
		{in: "spec.runtimePatches[manager=x]trainingRuntimeSpec", wantErr: `invalid path "spec.runtimePatches[manager=x]trainingRuntimeSpec": expected . or [ after ]`},
		{in: "spec]", wantErr: `invalid path "spec]": unexpected character in field name "spec]"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("path mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// entry is a managedFields entry with hand-written FieldsV1 JSON.
func entry(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager:    manager,
		Operation:  op,
		FieldsType: "FieldsV1",
		FieldsV1:   &metav1.FieldsV1{Raw: []byte(fields)},
	}
}

func TestOwners(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		entry("kubeflow-sdk", metav1.ManagedFieldsOperationApply, `{"f:spec":{
			"f:runtimeRef":{"f:name":{}},
			"f:suspend":{},
			"f:runtimePatches":{"k:{\"manager\":\"trainer.kubeflow.org/kubeflow-sdk\"}":{".":{},"f:manager":{},"f:trainingRuntimeSpec":{"f:template":{"f:spec":{}}}}}}}`),
		entry("kueue-admission", metav1.ManagedFieldsOperationApply, `{"f:spec":{
			"f:runtimePatches":{"k:{\"manager\":\"kueue.x-k8s.io/manager\"}":{".":{},"f:manager":{},"f:trainingRuntimeSpec":{".":{},"f:template":{}}}}}}`),
		// The same manager again, by update: one owner, not two.
		entry("kueue-admission", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:suspend":{}}}`),
		entry("trainer", metav1.ManagedFieldsOperationUpdate, `{"f:status":{"f:conditions":{}}}`),
		// A key the server keeps as a number.
		entry("svc", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{"f:name":{}}}}}`),
		{Manager: "no-fields", Operation: metav1.ManagedFieldsOperationUpdate},
	}
	for _, tc := range []struct {
		name string
		path string
		want []string
	}{
		{name: "map-list item", path: "spec.runtimePatches[manager=kueue.x-k8s.io/manager]", want: []string{"kueue-admission"}},
		{name: "nested field of an item", path: "spec.runtimePatches[manager=trainer.kubeflow.org/kubeflow-sdk].trainingRuntimeSpec.template.spec", want: []string{"kubeflow-sdk"}},
		{name: "missing path", path: "spec.runtimePatches[manager=platform.example.com/policy]", want: nil},
		{name: "missing field below an item", path: "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.metadata", want: nil},
		{name: "two managers share a field", path: "spec.suspend", want: []string{"kubeflow-sdk", "kueue-admission"}},
		{name: "a parent is owned by everyone under it", path: "spec", want: []string{"kubeflow-sdk", "kueue-admission", "svc"}},
		{name: "numeric key", path: "spec.ports[port=80,protocol=TCP].name", want: []string{"svc"}},
		{name: "status", path: "status.conditions", want: []string{"trainer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Owners(entries, p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("owners of %s mismatch (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

func TestOwnersBadFieldsV1(t *testing.T) {
	_, err := Owners([]metav1.ManagedFieldsEntry{entry("x", metav1.ManagedFieldsOperationApply, `{`)}, Path{"f:spec"})
	if err == nil {
		t.Fatal("Owners succeeded on malformed FieldsV1")
	}
}
