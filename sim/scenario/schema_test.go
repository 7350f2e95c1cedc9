package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v4"

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

// TestLoaderFollowsSchemaConstraints: for every enum, minimum and maximum
// of the generated schema, the loader refuses, at that field, a value the
// schema refuses and accepts the values it allows. Each is tried in the
// first file of the corpus or the test data that sets the field, with the
// value replaced in place; a constraint no file exercises fails the test.
func TestLoaderFollowsSchemaConstraints(t *testing.T) {
	root, err := formatSchema()
	if err != nil {
		t.Fatal(err)
	}
	files, err := FindFiles([]string{"../../scenarios", "../../scenarios/" + ScaleDir, "../e2e/testdata"})
	if err != nil {
		t.Fatal(err)
	}
	valid, err := filepath.Glob("testdata/valid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(valid, files...)
	type site struct {
		file   string
		data   []byte
		path   string
		node   *yaml.Node
		schema *jsonSchema
	}
	sites := map[string]*site{} // by Type.field (or Type.field[] for items)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := newDecoder(f)
		doc := d.parse(data)
		if doc == nil {
			continue
		}
		d.walk(doc, reflect.TypeFor[v1alpha1.Scenario](), "")
		tree := d.convert(doc, "")
		if len(d.errs) > 0 {
			continue
		}
		constrained(root, root, "Scenario", tree, "", func(owner, path string, s *jsonSchema) {
			if _, ok := sites[owner]; !ok && d.pos[path] != nil && d.pos[path].Kind == yaml.ScalarNode {
				sites[owner] = &site{file: f, data: data, path: path, node: d.pos[path], schema: s}
			}
		})
	}
	all := map[string]*jsonSchema{}
	constrainedProperties(root, func(owner string, s *jsonSchema) { all[owner] = s })
	for owner, s := range all {
		t.Run(owner, func(t *testing.T) {
			st := sites[owner]
			if st == nil {
				t.Fatalf("no scenario of testdata/valid-*.yaml, scenarios/ or sim/e2e/testdata sets %s: add one, so that the loader's check of its constraint %s is tried", owner, describeConstraint(s))
			}
			try := func(literal string, refused bool) {
				t.Helper()
				data := replaceScalar(st.data, st.node, literal)
				_, err := Load(st.file, data, Options{})
				var hit string
				if errs, ok := err.(*Errors); ok {
					for _, e := range *errs {
						if e.Field == st.path {
							hit = e.Error()
						}
					}
				}
				switch {
				case refused && hit == "":
					t.Errorf("%s: %s = %s, which the schema refuses (%s), loads without a problem there", st.file, st.path, literal, describeConstraint(s))
				case !refused && hit != "":
					t.Errorf("%s: %s = %s, which the schema allows, is refused: %s", st.file, st.path, literal, hit)
				}
			}
			for _, e := range s.Enum {
				try(jsonLiteral(e), false)
			}
			if len(s.Enum) > 0 {
				try(`"not-one-of-them"`, true)
			}
			if s.Minimum != nil {
				try(jsonLiteral(*s.Minimum), false)
				try(jsonLiteral(*s.Minimum-1), true)
			}
			if s.Maximum != nil {
				try(jsonLiteral(*s.Maximum), false)
				try(jsonLiteral(*s.Maximum+1), true)
			}
		})
	}
}

// constrainedProperties calls fn with every property (and list items) of
// the schema that has an enum, a minimum or a maximum, named Type.field
// (Type.field[] for items).
func constrainedProperties(root *jsonSchema, fn func(owner string, s *jsonSchema)) {
	visit := func(typeName string, def *jsonSchema) {
		for name, p := range def.Properties {
			if hasValueConstraint(p) {
				fn(typeName+"."+name, p)
			}
			if p.Items != nil && hasValueConstraint(p.Items) {
				fn(typeName+"."+name+"[]", p.Items)
			}
		}
	}
	visit("Scenario", root)
	for name, def := range root.Definitions {
		visit(name, def)
	}
}

func hasValueConstraint(s *jsonSchema) bool {
	return len(s.Enum) > 0 || s.Minimum != nil || s.Maximum != nil
}

// constrained walks tree along the schema and calls fn with each value a
// constrained property holds, its owner (as constrainedProperties names it)
// and its path.
func constrained(root, s *jsonSchema, typeName string, v any, path string, fn func(owner, path string, s *jsonSchema)) {
	if ref, ok := strings.CutPrefix(s.Ref, "#/definitions/"); ok {
		s, typeName = root.Definitions[ref], ref
	}
	if s == nil {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			p := s.Properties[k]
			if p == nil {
				continue
			}
			at := join(path, k)
			if hasValueConstraint(p) {
				fn(typeName+"."+k, at, p)
			}
			if items, ok := x.([]any); ok && p.Items != nil {
				for i, item := range items {
					if hasValueConstraint(p.Items) {
						fn(typeName+"."+k+"[]", index(at, i), p.Items)
					}
					constrained(root, p.Items, typeName, item, index(at, i), fn)
				}
				continue
			}
			constrained(root, p, typeName, x, at, fn)
		}
	}
}

// replaceScalar returns data with the scalar of n written as literal.
func replaceScalar(data []byte, n *yaml.Node, literal string) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	line := lines[n.Line-1]
	start := len(string([]rune(line)[:n.Column-1]))
	end := start + len(n.Value)
	if q := line[start]; q == '"' || q == '\'' {
		end = start + 1 + strings.IndexByte(line[start+1:], q) + 1
	}
	lines[n.Line-1] = line[:start] + literal + line[end:]
	return []byte(strings.Join(lines, ""))
}

func jsonLiteral(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func describeConstraint(s *jsonSchema) string {
	var parts []string
	if len(s.Enum) > 0 {
		parts = append(parts, fmt.Sprintf("enum %v", s.Enum))
	}
	if s.Minimum != nil {
		parts = append(parts, fmt.Sprintf("minimum %v", *s.Minimum))
	}
	if s.Maximum != nil {
		parts = append(parts, fmt.Sprintf("maximum %v", *s.Maximum))
	}
	return strings.Join(parts, ", ")
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
