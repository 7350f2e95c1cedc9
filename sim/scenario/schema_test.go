package scenario

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// schemaPath is the generated schema (go run ./hack/schemagen).
const schemaPath = "../apis/v1alpha1/scenario.schema.json"

// readSchema returns the generated schema as a generic tree.
func readSchema(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatalf("failed to read the schema (run go run ./hack/schemagen): %v", err)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("failed to decode the schema: %v", err)
	}
	return s
}

// structTypes returns the struct types reachable from Scenario that the
// schema describes as objects (every struct but Duration).
func structTypes() []reflect.Type {
	var out []reflect.Type
	seen := map[reflect.Type]bool{}
	var visit func(reflect.Type)
	visit = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || reflect.PointerTo(t).Implements(unmarshalerType) {
			return
		}
		seen[t] = true
		out = append(out, t)
		for f := range t.Fields() {
			visit(f.Type)
		}
	}
	visit(reflect.TypeFor[v1alpha1.Scenario]())
	return out
}

// definition returns the schema of struct type t.
func definition(t *testing.T, schema map[string]any, typ reflect.Type) map[string]any {
	t.Helper()
	if typ == reflect.TypeFor[v1alpha1.Scenario]() {
		return schema
	}
	defs, _ := schema["definitions"].(map[string]any)
	def, ok := defs[typ.Name()].(map[string]any)
	if !ok {
		t.Fatalf("the schema has no definitions.%s", typ.Name())
	}
	return def
}

// TestSchemaHasEveryField checks that the generated schema describes every
// json field of every struct type, requires exactly the fields without
// omitempty, and closes every object, so that it cannot silently miss a
// field added to the types without running the generator.
func TestSchemaHasEveryField(t *testing.T) {
	schema := readSchema(t)
	for _, typ := range structTypes() {
		t.Run(typ.Name(), func(t *testing.T) {
			def := definition(t, schema, typ)
			props, _ := def["properties"].(map[string]any)
			var wantFields, wantRequired, gotRequired []string
			for _, f := range infoOf(typ).fields {
				wantFields = append(wantFields, f.name)
				if f.required {
					wantRequired = append(wantRequired, f.name)
				}
				p, ok := props[f.name].(map[string]any)
				if !ok {
					t.Errorf("the schema has no property %s.%s", typ.Name(), f.name)
					continue
				}
				if d, _ := p["description"].(string); d == "" {
					t.Errorf("property %s.%s has no description", typ.Name(), f.name)
				}
			}
			if len(props) != len(wantFields) {
				t.Errorf("%s has %d properties in the schema, want %d (%s)", typ.Name(), len(props), len(wantFields), strings.Join(wantFields, ", "))
			}
			for _, r := range asList(def["required"]) {
				gotRequired = append(gotRequired, r.(string))
			}
			if diff := cmp.Diff(wantRequired, gotRequired); diff != "" {
				t.Errorf("required mismatch (-want +got):\n%s", diff)
			}
			if def["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties is %v, want false", typ.Name(), def["additionalProperties"])
			}
		})
	}
}

// TestSchemaEnums checks that the schema allows the values the loader does.
func TestSchemaEnums(t *testing.T) {
	schema := readSchema(t)
	for _, tc := range []struct {
		typ   reflect.Type
		field string
		want  []string
	}{
		{reflect.TypeFor[v1alpha1.Scenario](), "apiVersion", []string{v1alpha1.GroupVersion}},
		{reflect.TypeFor[v1alpha1.Scenario](), "kind", []string{v1alpha1.Kind}},
		{reflect.TypeFor[v1alpha1.NodeGroup](), "profile", fakegpu.ProfileNames()},
		{reflect.TypeFor[v1alpha1.Taint](), "effect", taintEffects},
		{reflect.TypeFor[v1alpha1.Step](), "fieldValidation", fieldValidations},
		{reflect.TypeFor[v1alpha1.Patch](), "type", patchTypes},
		{reflect.TypeFor[v1alpha1.PodExpectation](), "phase", podPhases},
		{reflect.TypeFor[v1alpha1.PodFailure](), "reason", failureReasons},
		{reflect.TypeFor[v1alpha1.KubeletAction](), "reason", failureReasons},
		{reflect.TypeFor[v1alpha1.KubeletAction](), "action", kubeletActions},
		{reflect.TypeFor[v1alpha1.PodExpectation](), "nodeProfile", fakegpu.ProfileNames()},
	} {
		t.Run(tc.typ.Name()+"."+tc.field, func(t *testing.T) {
			props, _ := definition(t, schema, tc.typ)["properties"].(map[string]any)
			prop, _ := props[tc.field].(map[string]any)
			var got []string
			for _, v := range asList(prop["enum"]) {
				got = append(got, v.(string))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("enum mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
