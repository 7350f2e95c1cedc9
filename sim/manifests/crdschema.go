package manifests

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	sigsyaml "sigs.k8s.io/yaml"
)

// CRDSchema is the schema of one served version of a CRD, used offline the
// way the API server uses it on a create: prune the fields it does not
// know, default, then validate (OpenAPI, then the CEL rules that do not
// compare with an old object).
type CRDSchema struct {
	// Group, Version and Kind are what the CRD serves.
	Group, Version, Kind string
	// Versions are every version the CRD serves.
	Versions   []string
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	// cel is built on first use: compiling the rules is most of the cost.
	cel func() *cel.Validator
}

var (
	crdSchemasMu sync.Mutex
	crdSchemas   = map[crdSchemaKey]*CRDSchema{}
)

type crdSchemaKey struct{ source, file, version string }

// ReadCRDSchema returns the schema of version of the CRD in file of fsys,
// read once per process for each source (a name for fsys, such as the
// release whose fixtures it holds).
func ReadCRDSchema(source string, fsys fs.FS, file, version string) (*CRDSchema, error) {
	key := crdSchemaKey{source, file, version}
	crdSchemasMu.Lock()
	defer crdSchemasMu.Unlock()
	if s, ok := crdSchemas[key]; ok {
		return s, nil
	}
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, fmt.Errorf("failed to read CRD %s: %w", file, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := sigsyaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("failed to decode CRD %s: %w", file, err)
	}
	s := &CRDSchema{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind}
	var props *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		s.Versions = append(s.Versions, v.Name)
		if v.Name == version && v.Schema != nil {
			props = v.Schema.OpenAPIV3Schema
		}
	}
	if props == nil {
		return nil, fmt.Errorf("CRD %s serves no schema for %s", file, version)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props, internal, nil); err != nil {
		return nil, fmt.Errorf("failed to convert the schema of CRD %s: %w", file, err)
	}
	if s.structural, err = structuralschema.NewStructural(internal); err != nil {
		return nil, fmt.Errorf("failed to read the schema of CRD %s: %w", file, err)
	}
	if s.validator, _, err = apiservervalidation.NewSchemaValidator(internal); err != nil {
		return nil, fmt.Errorf("failed to read the schema of CRD %s: %w", file, err)
	}
	s.cel = sync.OnceValue(func() *cel.Validator { return cel.NewValidator(s.structural, true, celconfig.PerCallLimit) })
	crdSchemas[key] = s
	return s, nil
}

// Prune removes from obj what the schema does not know, as the API server
// does, and returns the paths of what it removed (spec.suspended,
// spec.runtimePatches[0].x).
func (s *CRDSchema) Prune(obj map[string]any) []string {
	return pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
}

// Fields returns the names of the fields the schema knows below path, given
// as its elements: a field name, or "[]" for a list's items.
func (s *CRDSchema) Fields(path []string) []string {
	st := s.structural
	for _, e := range path {
		switch {
		case st == nil:
			return nil
		case e == "[]":
			st = st.Items
		default:
			p, ok := st.Properties[e]
			if !ok {
				return nil
			}
			st = &p
		}
	}
	if st == nil {
		return nil
	}
	names := make([]string, 0, len(st.Properties))
	for n := range st.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Default sets the schema's defaults in obj.
func (s *CRDSchema) Default(obj map[string]any) { defaulting.Default(obj, s.structural) }

// Validate validates a new object, pruned and defaulted, against the
// schema: its OpenAPI constraints, then its CEL rules (those that compare
// with an old object do not run on a create). obj must hold JSON values
// (int64, float64), as Decode gives.
func (s *CRDSchema) Validate(ctx context.Context, obj map[string]any) field.ErrorList {
	errs := apiservervalidation.ValidateCustomResource(nil, obj, s.validator)
	if v := s.cel(); v != nil && len(errs) == 0 {
		celErrs, _ := v.Validate(ctx, nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// JSONValues returns a copy of v with the numbers the API server's JSON
// decoding would give: integers (int, int32, uint64, and a float64 without
// a fraction, as a YAML or JSON decode may give them) as int64, other
// numbers as float64. The schema validators want them so.
func JSONValues(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = JSONValues(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = JSONValues(x)
		}
		return out
	case int:
		return int64(t)
	case int32:
		return int64(t)
	case uint64:
		return int64(t)
	case float32:
		return JSONValues(float64(t))
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t)
		}
		return t
	}
	return v
}
