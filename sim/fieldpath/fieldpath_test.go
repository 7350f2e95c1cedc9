package fieldpath

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParse(t *testing.T) {
	f, item, idx := Field, Item, Index
	for _, tc := range []struct {
		in      string
		want    Path
		wantErr string
	}{
		{in: "spec", want: Path{f("spec")}},
		{in: "spec.suspend", want: Path{f("spec"), f("suspend")}},
		{
			in:   "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec",
			want: Path{f("spec"), f("runtimePatches"), item("manager", "kueue.x-k8s.io/manager"), f("trainingRuntimeSpec")},
		},
		{
			in:   "spec.runtimePatches[manager=kueue.x-k8s.io/manager]",
			want: Path{f("spec"), f("runtimePatches"), item("manager", "kueue.x-k8s.io/manager")},
		},
		{
			// Key fields stay in the order written.
			in:   "spec.ports[protocol=TCP,port=80]",
			want: Path{f("spec"), f("ports"), {Kind: KeyKind, Key: []KeyField{{"protocol", "TCP"}, {"port", "80"}}}},
		},
		{in: "a[k=x][k=y].b", want: Path{f("a"), item("k", "x"), item("k", "y"), f("b")}},
		{in: "spec.trainer.args[0]", want: Path{f("spec"), f("trainer"), f("args"), idx(0)}},
		{in: "body[4][12]", want: Path{f("body"), idx(4), idx(12)}},
		{
			// A field name with dots, such as a label key, is quoted.
			in:   `spec.template.spec.nodeSelector["node.kubernetes.io/instance-type"]`,
			want: Path{f("spec"), f("template"), f("spec"), f("nodeSelector"), f("node.kubernetes.io/instance-type")},
		},
		{in: `metadata.labels["a.b/c"].x[k=v]`, want: Path{f("metadata"), f("labels"), f("a.b/c"), f("x"), item("k", "v")}},
		{in: `["a.b"].c`, want: Path{f("a.b"), f("c")}},
		{in: `labels[""]`, want: Path{f("labels"), f("")}},
		// Unquoted names the printer would quote are read all the same.
		{in: "metadata.labels.app/name", want: Path{f("metadata"), f("labels"), f("app/name")}},
		{in: "data.2fa", want: Path{f("data"), f("2fa")}},
		// Quoted values.
		{in: `l[name="a]b"]`, want: Path{f("l"), item("name", "a]b")}},
		{in: `l[name="a,b",x="\"q\""]`, want: Path{f("l"), {Kind: KeyKind, Key: []KeyField{{"name", "a,b"}, {"x", `"q"`}}}}},
		{in: `l[name=""]`, want: Path{f("l"), item("name", "")}},
		{in: `l[k=a=b]`, want: Path{f("l"), item("k", "a=b")}},

		{in: "", wantErr: "empty path"},
		{in: `spec.nodeSelector["a.b`, wantErr: `invalid path "spec.nodeSelector[\"a.b": unterminated quoted name at "a.b`},
		{in: `spec.nodeSelector["a.b"`, wantErr: `invalid path "spec.nodeSelector[\"a.b\"": expected ] after the quoted name "a.b"`},
		{in: "spec..suspend", wantErr: `invalid path "spec..suspend": empty field name`},
		{in: ".spec", wantErr: `invalid path ".spec": empty field name`},
		{in: "spec.", wantErr: `invalid path "spec.": empty field name`},
		{in: "spec.runtimePatches[manager=x", wantErr: `invalid path "spec.runtimePatches[manager=x": missing ]`},
		{in: "spec.runtimePatches[]", wantErr: `invalid path "spec.runtimePatches[]": empty []: want [key=value], [0] or ["name"]`},
		{in: "spec.runtimePatches[manager]", wantErr: `invalid path "spec.runtimePatches[manager]": [manager]: want [key=value] for a list item, or ["manager"] for a field or map key`},
		{in: "matchLabels[jobset.sigs.k8s.io/name]", wantErr: `invalid path "matchLabels[jobset.sigs.k8s.io/name]": [jobset.sigs.k8s.io/name]: want [key=value] for a list item, or ["jobset.sigs.k8s.io/name"] for a field or map key`},
		{in: "spec.runtimePatches[manager=]", wantErr: `invalid path "spec.runtimePatches[manager=]": empty value of key manager (an empty string is written manager="")`},
		{in: "spec.runtimePatches[=x]", wantErr: `invalid path "spec.runtimePatches[=x]": empty key name before =`},
		{in: "spec.runtimePatches[a=x,a=y]", wantErr: `invalid path "spec.runtimePatches[a=x,a=y]": key "a" twice in one item selector`},
		{in: `l[name="a"b]`, wantErr: `invalid path "l[name=\"a\"b]": expected , or ] after the value of key name`},
		{in: "spec.runtimePatches[manager=x]trainingRuntimeSpec", wantErr: `invalid path "spec.runtimePatches[manager=x]trainingRuntimeSpec": expected . or [ after spec.runtimePatches[manager=x]`},
		{in: "spec]", wantErr: `invalid path "spec]": unexpected ']' after "spec": a name with such characters is quoted, ["..."]`},
		{in: "args[1x]", wantErr: `invalid path "args[1x]": invalid list position [1x]: want [0], [1], ...`},
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

// TestPrintParseRoundTrip checks that what the printer writes the parser
// reads back as the same path, and that the printer's spelling is the one
// the package documents.
func TestPrintParseRoundTrip(t *testing.T) {
	f, item, idx := Field, Item, Index
	for _, tc := range []struct {
		path Path
		want string
	}{
		{Path{f("spec"), f("suspend")}, "spec.suspend"},
		{
			Path{f("spec"), f("runtimePatches"), item("manager", "kueue.x-k8s.io/manager"), f("trainingRuntimeSpec"), f("template"), f("spec"),
				f("replicatedJobs"), item("name", "node"), f("template"), f("spec"), f("template"), f("spec"), f("nodeSelector"), f("node.kubernetes.io/instance-type")},
			`spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec.replicatedJobs[name=node].template.spec.template.spec.nodeSelector["node.kubernetes.io/instance-type"]`,
		},
		{Path{f("spec"), f("nodeSelector"), f("node-pool")}, "spec.nodeSelector.node-pool"},
		{Path{f("limits"), f("nvidia.com/gpu")}, `limits["nvidia.com/gpu"]`},
		{Path{f("labels"), f("2fa")}, `labels["2fa"]`},
		{Path{f("annotations"), f(`say "hi"`)}, `annotations["say \"hi\""]`},
		{Path{f("a.b"), f("c")}, `["a.b"].c`},
		{Path{f("labels"), f("")}, `labels[""]`},
		{Path{f("args"), idx(0)}, "args[0]"},
		{Path{f("ports"), {Kind: KeyKind, Key: []KeyField{{"containerPort", "8080"}, {"protocol", "TCP"}}}}, "ports[containerPort=8080,protocol=TCP]"},
		{Path{f("l"), item("name", "a]b")}, `l[name="a]b"]`},
		{Path{f("l"), item("name", "a,b")}, `l[name="a,b"]`},
		{Path{f("l"), item("name", `"`)}, `l[name="\""]`},
		{Path{f("l"), item("name", "")}, `l[name=""]`},
		{Path{f("l"), item("name", " x")}, `l[name=" x"]`},
		{Path{f("l"), item("name", "a\nb")}, `l[name="a\nb"]`},
		{Path{f("l"), item("name", "a=b.c/d")}, `l[name=a=b.c/d]`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.path.String(); got != tc.want {
				t.Errorf("String() = %s, want %s", got, tc.want)
			}
			back, err := Parse(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.path, back); diff != "" {
				t.Errorf("Parse(String()) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppendAndParent(t *testing.T) {
	p := AppendField("", "spec")
	p = AppendField(p, "nodeSelector")
	p = AppendField(p, "cloud.google.com/gke-accelerator")
	if want := `spec.nodeSelector["cloud.google.com/gke-accelerator"]`; p != want {
		t.Errorf("AppendField: %s, want %s", p, want)
	}
	if got, want := Parent(p), "spec.nodeSelector"; got != want {
		t.Errorf("Parent(%s) = %s, want %s", p, got, want)
	}
	q := AppendIndex(AppendItem("spec.containers", "name", "node"), 2)
	if want := "spec.containers[name=node][2]"; q != want {
		t.Errorf("AppendItem, AppendIndex: %s, want %s", q, want)
	}
	for in, want := range map[string]string{
		q:                      "spec.containers[name=node]",
		"spec":                 "",
		`["a.b"]`:              "",
		`l[name="a].b"].c`:     `l[name="a].b"]`,
		"not a [path":          "",
		"":                     "",
		"spec.steps[2].actor":  "spec.steps[2]",
		"spec.steps[2]":        "spec.steps",
		`data["a.b"]["c.d"]`:   `data["a.b"]`,
		"metadata.labels.area": "metadata.labels",
	} {
		if got := Parent(in); got != want {
			t.Errorf("Parent(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSelects(t *testing.T) {
	node := map[string]any{"name": "node", "replicas": float64(2)}
	port := map[string]any{"containerPort": float64(8080), "protocol": "TCP"}
	for _, tc := range []struct {
		e    Element
		item any
		i    int
		want bool
	}{
		{Item("name", "node"), node, 5, true},
		{Item("name", "other"), node, 0, false},
		{Item("replicas", "2"), node, 0, true},
		{Item("missing", "x"), node, 0, false},
		{Item("name", "node"), "node", 0, false},
		{Index(3), node, 3, true},
		{Index(3), node, 2, false},
		{Element{Kind: KeyKind, Key: []KeyField{{"containerPort", "8080"}, {"protocol", "TCP"}}}, port, 0, true},
		{Element{Kind: KeyKind, Key: []KeyField{{"containerPort", "8080"}, {"protocol", "UDP"}}}, port, 0, false},
		{Field("name"), node, 0, false},
	} {
		if got := tc.e.Selects(tc.item, tc.i); got != tc.want {
			t.Errorf("%s selects %v at %d: %v, want %v", Path{tc.e}, tc.item, tc.i, got, tc.want)
		}
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
			"f:args":{"i:1":{}},
			"f:suspend":{},
			"f:runtimePatches":{"k:{\"manager\":\"trainer.kubeflow.org/kubeflow-sdk\"}":{".":{},"f:manager":{},"f:trainingRuntimeSpec":{"f:template":{"f:spec":{}}}}}}}`),
		entry("kueue-admission", metav1.ManagedFieldsOperationApply, `{"f:spec":{
			"f:runtimePatches":{"k:{\"manager\":\"kueue.x-k8s.io/manager\"}":{".":{},"f:manager":{},"f:trainingRuntimeSpec":{".":{},"f:template":{"f:metadata":{"f:labels":{"f:kueue.x-k8s.io/podset":{}}}}}}}}}`),
		// The same manager again, by update: one owner, not two.
		entry("kueue-admission", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:suspend":{}}}`),
		entry("trainer", metav1.ManagedFieldsOperationUpdate, `{"f:status":{"f:conditions":{}},"f:spec":{"f:tolerations":{}}}`),
		// A key the server keeps as a number.
		entry("svc", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{"f:name":{}}},"f:volume":{"f:emptyDir":{"f:medium":{}}}}}`),
		entry("vol", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:volume":{"f:emptyDir":{}}}}`),
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
		{name: "missing field below an item", path: "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec", want: nil},
		{name: "two managers share a field", path: "spec.suspend", want: []string{"kubeflow-sdk", "kueue-admission"}},
		{name: "a parent is owned by everyone under it", path: "spec", want: []string{"kubeflow-sdk", "kueue-admission", "svc", "trainer", "vol"}},
		{name: "numeric key", path: "spec.ports[port=80,protocol=TCP].name", want: []string{"svc"}},
		{name: "key fields in another order", path: "spec.ports[protocol=TCP,port=80].name", want: []string{"svc"}},
		{name: "quoted map key", path: `spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.metadata.labels["kueue.x-k8s.io/podset"]`, want: []string{"kueue-admission"}},
		{name: "list position", path: "spec.args[1]", want: []string{"kubeflow-sdk"}},
		{name: "an item of an atomic list belongs to the list's owner", path: "spec.tolerations[0].key", want: []string{"trainer"}},
		{name: "a key of an atomic map belongs to the map's owner", path: `status.conditions["a.b"]`, want: []string{"trainer"}},
		{name: "a field under a leaf others hold fields of is not the leaf's", path: "spec.volume.emptyDir.medium", want: []string{"svc"}},
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
	_, err := Owners([]metav1.ManagedFieldsEntry{entry("x", metav1.ManagedFieldsOperationApply, `{`)}, Path{Field("spec")})
	if err == nil {
		t.Fatal("Owners succeeded on malformed FieldsV1")
	}
}

func TestLookup(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{
		"replicatedJobs": []any{
			map[string]any{"name": "init", "replicas": int64(1)},
			map[string]any{"name": "node", "template": map[string]any{"nodeSelector": map[string]any{"a.b/c": "x"}}},
		},
		"args": []any{"--a", "--b"},
	}}
	for _, tc := range []struct {
		path    string
		want    any
		wantErr string
	}{
		{path: `spec.replicatedJobs[name=node].template.nodeSelector["a.b/c"]`, want: "x"},
		{path: "spec.replicatedJobs[replicas=1].name", want: "init"},
		{path: "spec.args[1]", want: "--b"},
		{path: "spec.args", want: []any{"--a", "--b"}},
		{path: "status", wantErr: `the root has no field "status"`},
		{path: "spec.replicatedJobs.template", wantErr: "spec.replicatedJobs is a list: select an item by key, spec.replicatedJobs[name=init], or by position, spec.replicatedJobs[0]"},
		{path: "spec.replicatedJobs[name=launcher]", wantErr: "no item of spec.replicatedJobs has name=launcher"},
		{path: "spec.args[2]", wantErr: "spec.args has 2 items: no [2]"},
		{path: "spec[0]", wantErr: "spec is a mapping, not a list: name one of its fields"},
		{path: "spec.args[0].x", wantErr: "spec.args[0] is a single value: nothing is under it"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			p, err := Parse(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Lookup(obj, p)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("value mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeyValue: a key value as a path spells it, whatever type the decoded
// object gave it.
func TestKeyValue(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{"node", "node"},
		{nil, ""},
		{float64(8080), "8080"},
		{int64(3), "3"},
		{true, "true"},
		{map[string]any{"b": 1, "a": "x"}, `{"a":"x","b":1}`},
	} {
		if got := KeyValue(tc.in); got != tc.want {
			t.Errorf("KeyValue(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
