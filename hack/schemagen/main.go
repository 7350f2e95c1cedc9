// Command schemagen generates, from the Go types of the scenario format in
// sim/apis/v1alpha1 and their doc comments, the two files that describe the
// format to people and editors:
//
//   - sim/apis/v1alpha1/scenario.schema.json, a JSON Schema (draft-07) that
//     editors use through the "# yaml-language-server: $schema=..." line of
//     every scenario file;
//   - docs/scenario-reference.md, the field reference.
//
// Run it from anywhere in the checkout:
//
//	go run ./hack/schemagen          # write both files
//	go run ./hack/schemagen -check   # exit 1 if either is out of date
//
// The doc comments are the single source of the descriptions: a type or
// field without one is an error. Constraints the comments state in prose
// (allowed values, minimums) are in the constraints table below, taken from
// the constants of the API and of the packages that enforce them; the tests
// of sim/scenario check that the loader enforces the same values.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

const (
	// module is the module whose root the outputs are relative to.
	module = "github.com/trainersim/trainersim"
	// apiDir holds the Go types.
	apiDir = "sim/apis/v1alpha1"
	// SchemaPath and ReferencePath are the generated files.
	schemaPath    = "sim/apis/v1alpha1/scenario.schema.json"
	referencePath = "docs/scenario-reference.md"
	// durationPattern matches what time.ParseDuration accepts, without a
	// sign (Duration rejects negative values).
	durationPattern = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
)

// enumSources are the lists a +enumFrom marker may name: lists the code
// computes, which a marker cannot spell out.
var enumSources = map[string]func() []string{
	"profiles":   fakegpu.ProfileNames,
	"components": func() []string { return v1alpha1.Components },
}

// markers reads the constraint markers of a field's doc comment into
// JSON-schema keywords: +enum=a;b, +enumFrom=NAME (enumSources),
// +minimum=N, +maximum=N, +minLength=N, +maxLength=N, +minItems=N,
// +pattern=RE, +title=WORDS (what a problem with the value calls it);
// +items:KEYWORD=... constrains a list's items. They are the
// format's one statement of its enums and ranges: the schema carries them,
// and the loader checks files against the schema.
func markers(doc string) (map[string]any, error) {
	var out map[string]any
	for line := range strings.SplitSeq(doc, "\n") {
		line = strings.TrimSpace(line)
		key, value, ok := strings.Cut(strings.TrimPrefix(line, "+"), "=")
		if !strings.HasPrefix(line, "+") || !ok {
			continue
		}
		target := &out
		var items map[string]any
		if k, isItems := strings.CutPrefix(key, "items:"); isItems {
			items, _ = out["items"].(map[string]any)
			key, target = k, &items
		}
		if *target == nil {
			*target = map[string]any{}
		}
		switch key {
		case "enum":
			(*target)["enum"] = strings.Split(value, ";")
		case "enumFrom":
			source, ok := enumSources[value]
			if !ok {
				return nil, fmt.Errorf("+enumFrom=%s: no such list (enumSources)", value)
			}
			(*target)["enum"] = source()
		case "minimum", "maximum", "minLength", "maxLength", "minItems":
			n, err := strconv.Atoi(value)
			if err != nil {
				return nil, fmt.Errorf("+%s=%s: not an integer", key, value)
			}
			(*target)[key] = n
		case "pattern", "title":
			(*target)[key] = value
		default:
			return nil, fmt.Errorf("unknown marker +%s", key)
		}
		if items != nil {
			if out == nil {
				out = map[string]any{}
			}
			out["items"] = items
		}
	}
	return out, nil
}

func main() {
	check := flag.Bool("check", false, "do not write: exit 1 if a generated file differs from what would be written")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./hack/schemagen [-check]\n\nwrites %s and %s from the types in %s\n\n", schemaPath, referencePath, apiDir)
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*check, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "schemagen: %v\n", err)
		os.Exit(1)
	}
}

// errOutOfDate is returned by run with check when a file differs.
var errOutOfDate = errors.New("generated files are out of date: run 'go run ./hack/schemagen' (make generate) and commit the result")

func run(check bool, out io.Writer) error {
	root, err := findRoot()
	if err != nil {
		return err
	}
	files, err := generate(root)
	if err != nil {
		return err
	}
	stale := false
	for _, rel := range []string{schemaPath, referencePath} {
		path := filepath.Join(root, filepath.FromSlash(rel))
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to read %s: %w", rel, err)
		}
		if bytes.Equal(old, files[rel]) {
			continue
		}
		if check {
			fmt.Fprintf(out, "%s is out of date\n", rel)
			stale = true
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("failed to create the directory of %s: %w", rel, err)
		}
		if err := os.WriteFile(path, files[rel], 0o644); err != nil {
			return fmt.Errorf("failed to write %s: %w", rel, err)
		}
		fmt.Fprintf(out, "wrote %s\n", rel)
	}
	if stale {
		return errOutOfDate
	}
	return nil
}

// findRoot returns the root of the trainersim module: the nearest directory
// at or above the working directory whose go.mod declares it.
func findRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("failed to get the working directory: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if first, _, _ := strings.Cut(string(data), "\n"); strings.TrimSpace(first) == "module "+module {
				return dir, nil
			}
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod of %s in %s or its parents: run from the trainersim checkout", module, wd)
		}
	}
}

// docs are the doc comments of the API package.
type docs struct {
	pkg    string
	types  map[string]string
	fields map[string]string // "Type.GoField"
}

// parseDocs reads the doc comments of the Go files in dir.
func parseDocs(dir string) (*docs, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("failed to parse %s: %w", p, err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, module+"/"+apiDir)
	if err != nil {
		return nil, fmt.Errorf("failed to read the doc comments of %s: %w", dir, err)
	}
	d := &docs{pkg: pkg.Doc, types: map[string]string{}, fields: map[string]string{}}
	for _, t := range pkg.Types {
		d.types[t.Name] = t.Doc
		for _, spec := range t.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, f := range st.Fields.List {
				for _, name := range f.Names {
					d.fields[ts.Name.Name+"."+name.Name] = f.Doc.Text()
				}
			}
		}
	}
	return d, nil
}

// clean turns a doc comment into text: marker lines (+optional) dropped,
// the lines of a paragraph joined, paragraphs separated by a blank line.
func clean(comment string) string {
	var paras []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, " "))
			cur = nil
		}
	}
	for line := range strings.SplitSeq(comment, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "+"):
		case line == "":
			flush()
		default:
			cur = append(cur, line)
		}
	}
	flush()
	return strings.Join(paras, "\n\n")
}

// field is one field of a struct type, as the schema and reference see it.
type field struct {
	goName, name string
	typ          reflect.Type
	required     bool
	doc          string
	// constraints are the JSON-schema keywords of its markers.
	constraints map[string]any
}

// typeInfo is one named type of the format.
type typeInfo struct {
	name   string
	typ    reflect.Type
	doc    string
	fields []field // structs only
}

var (
	objectType   = reflect.TypeFor[v1alpha1.Object]()
	durationType = reflect.TypeFor[v1alpha1.Duration]()
	ordersType   = reflect.TypeFor[v1alpha1.Orders]()
	scenarioType = reflect.TypeFor[v1alpha1.Scenario]()
)

// collect returns the named types reachable from Scenario, depth first in
// field order, so that each type follows the first type that uses it.
func collect(d *docs) ([]*typeInfo, error) {
	var (
		out  []*typeInfo
		errs []error
	)
	seen := map[reflect.Type]bool{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || (t.Kind() == reflect.Map && t.Name() == "") {
			t = t.Elem()
		}
		if t.PkgPath() != scenarioType.PkgPath() || seen[t] {
			return
		}
		seen[t] = true
		ti := &typeInfo{name: t.Name(), typ: t, doc: clean(d.types[t.Name()])}
		if ti.doc == "" {
			errs = append(errs, fmt.Errorf("type %s has no doc comment", t.Name()))
		}
		if extra := registryDoc(t); extra != "" {
			ti.doc += "\n\n" + extra
		}
		out = append(out, ti)
		if t.Kind() != reflect.Struct || t == durationType || t == ordersType {
			return
		}
		for f := range t.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				errs = append(errs, fmt.Errorf("field %s.%s has no json tag", t.Name(), f.Name))
				continue
			}
			fd := clean(d.fields[t.Name()+"."+f.Name])
			if fd == "" {
				errs = append(errs, fmt.Errorf("field %s.%s has no doc comment", t.Name(), f.Name))
			}
			c, err := markers(d.fields[t.Name()+"."+f.Name])
			if err != nil {
				errs = append(errs, fmt.Errorf("field %s.%s: %w", t.Name(), f.Name, err))
			}
			ti.fields = append(ti.fields, field{
				goName:      f.Name,
				name:        name,
				typ:         f.Type,
				required:    !slices.Contains(strings.Split(opts, ","), "omitempty"),
				doc:         fd,
				constraints: c,
			})
		}
		for _, f := range ti.fields {
			visit(f.typ)
		}
	}
	visit(scenarioType)
	return out, errors.Join(errs...)
}

// generate returns the contents of the generated files by path.
func generate(root string) (map[string][]byte, error) {
	d, err := parseDocs(filepath.Join(root, filepath.FromSlash(apiDir)))
	if err != nil {
		return nil, err
	}
	types, err := collect(d)
	if err != nil {
		return nil, err
	}
	schema, err := schemaJSON(types)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		schemaPath:    schema,
		referencePath: reference(d, types),
	}, nil
}

// sendsObject lists the verbs that send an object of their own: "create,
// apply or update".
func sendsObject() string {
	names := v1alpha1.VerbNames(v1alpha1.Verb.SendsObject)
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// schemaJSON returns the JSON schema: Scenario at the root, every other
// struct in definitions.
func schemaJSON(types []*typeInfo) ([]byte, error) {
	defs := map[string]any{}
	var rootSchema map[string]any
	for _, ti := range types {
		if ti.typ.Kind() != reflect.Struct || ti.typ == durationType || ti.typ == ordersType {
			continue
		}
		s := structSchema(ti)
		if ti.typ == scenarioType {
			rootSchema = s
			continue
		}
		defs[ti.name] = s
	}
	rootSchema["$schema"] = "http://json-schema.org/draft-07/schema#"
	rootSchema["title"] = "trainersim Scenario (" + v1alpha1.GroupVersion + ")"
	rootSchema["definitions"] = defs
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rootSchema); err != nil {
		return nil, fmt.Errorf("failed to encode the schema: %w", err)
	}
	return buf.Bytes(), nil
}

func structSchema(ti *typeInfo) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range ti.fields {
		s := typeSchema(f.typ)
		s["description"] = f.doc
		for k, v := range f.constraints {
			if items, ok := v.(map[string]any); ok && k == "items" {
				if own, ok := s["items"].(map[string]any); ok {
					maps.Copy(own, items)
					continue
				}
			}
			s[k] = v
		}
		props[f.name] = s
		if f.required {
			required = append(required, f.name)
		}
	}
	s := map[string]any{
		"type":                 "object",
		"description":          ti.doc,
		"additionalProperties": false,
		"properties":           props,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	maps.Copy(s, registryKeywords(ti.typ))
	return s
}

var (
	stepType   = reflect.TypeFor[v1alpha1.Step]()
	expectType = reflect.TypeFor[v1alpha1.Expect]()
)

// registryDoc is what the reference and the schema say about a type after
// its doc comment, from the lists of sim/apis/v1alpha1/registry.go: the
// verbs of a step and the kinds of an expect, so that a new one is
// documented by its entry.
func registryDoc(t reflect.Type) string {
	var items []string
	switch t {
	case stepType:
		for _, v := range v1alpha1.Verbs {
			item := "`" + v.Name + "`"
			switch {
			case v.Group:
				item += " (a group of writes)"
			case !v.Write:
				item += " (a read, not a write)"
			}
			items = append(items, item)
		}
		return "Verbs, at most one per step: " + strings.Join(items, ", ") + "."
	case expectType:
		for _, name := range v1alpha1.ExpectationNames() {
			items = append(items, "`"+name+"`")
		}
		return "Expectations, at least one per expect: " + strings.Join(items, ", ") + "."
	}
	return ""
}

// registryKeywords are the JSON-schema keywords of the rules the lists of
// sim/apis/v1alpha1/registry.go make: a step has at most one verb and a
// verb or an expect; an expect has at least one expectation.
func registryKeywords(t reflect.Type) map[string]any {
	switch t {
	case stepType:
		var pairs, some []any
		for i, a := range v1alpha1.Verbs {
			some = append(some, map[string]any{"required": []string{a.Name}})
			for _, b := range v1alpha1.Verbs[i+1:] {
				pairs = append(pairs, map[string]any{"required": []string{a.Name, b.Name}})
			}
		}
		some = append(some, map[string]any{"required": []string{"expect"}})
		return map[string]any{"not": map[string]any{"anyOf": pairs}, "anyOf": some}
	case expectType:
		var some []any
		for _, name := range v1alpha1.ExpectationNames() {
			some = append(some, map[string]any{"required": []string{name}})
		}
		return map[string]any{"anyOf": some}
	}
	return nil
}

// typeSchema returns the schema of a value of type t.
func typeSchema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == objectType:
		return map[string]any{"type": "object"}
	case t == durationType:
		return map[string]any{"type": "string", "pattern": durationPattern}
	case t == ordersType:
		return map[string]any{"oneOf": []any{
			map[string]any{"type": "integer", "minimum": 1},
			map[string]any{"type": "string", "enum": []string{"all"}},
		}}
	case t.Kind() == reflect.Interface:
		return map[string]any{}
	case t.Kind() == reflect.Struct:
		return map[string]any{"$ref": "#/definitions/" + t.Name()}
	}
	switch t.Kind() {
	case reflect.Slice:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": typeSchema(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	}
	panic(fmt.Sprintf("schemagen: no schema for type %s: teach typeSchema", t))
}

// reference returns the Markdown field reference.
func reference(d *docs, types []*typeInfo) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!-- Generated by go run ./hack/schemagen from the doc comments in %s. DO NOT EDIT. -->\n\n", apiDir)
	fmt.Fprintf(&b, "# Scenario reference\n\n")
	fmt.Fprintf(&b, "Every field of a scenario file (`apiVersion: %s`, `kind: %s`), generated from the Go types in\n", v1alpha1.GroupVersion, v1alpha1.Kind)
	fmt.Fprintf(&b, "[`%s`](../%s). A file may start with a line that lets editors validate it against\n", apiDir, apiDir)
	fmt.Fprintf(&b, "[`%s`](../%s), with the path relative to the file (or a URL):\n\n", schemaPath, schemaPath)
	fmt.Fprintf(&b, "```yaml\n# yaml-language-server: $schema=../sim/apis/v1alpha1/scenario.schema.json\n```\n\n")
	fmt.Fprintf(&b, "`simctl lint PATH...` checks files without starting a cluster; it warns, without failing, when a file\n")
	fmt.Fprintf(&b, "has no such line or names a file that is not there.\n\n")
	b.WriteString(clean(d.pkg) + "\n\n")
	b.WriteString("## Types\n\n")
	for _, ti := range types {
		fmt.Fprintf(&b, "- [%s](#%s)\n", ti.name, strings.ToLower(ti.name))
	}
	for _, ti := range types {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n", ti.name, ti.doc)
		switch {
		case ti.typ == objectType:
			fmt.Fprintf(&b, "\nFree-form: any YAML mapping. Objects to %s must have `apiVersion`, `kind` and\n"+
				"`metadata.name` (%s also accepts `metadata.generateName`); fragments (`update.set`, `pods.all`,\n"+
				"`objects[].match`) are not checked.\n", sendsObject(), v1alpha1.VerbCreate)
			continue
		case ti.typ == durationType:
			b.WriteString("\nA string: a Go duration such as `30s`, `1m30s` or `500ms`; not negative.\n")
			continue
		case ti.typ == ordersType:
			b.WriteString("\n`all`, or a positive number.\n")
			continue
		case ti.typ.Kind() != reflect.Struct:
			continue
		}
		b.WriteString("\n| Field | Type | Required | Description |\n|---|---|---|---|\n")
		for _, f := range ti.fields {
			req := "optional"
			if f.required {
				req = "**required**"
			}
			desc := f.doc + constraintText(f.constraints)
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.name, typeName(f.typ), req, cell(desc))
		}
	}
	return b.Bytes()
}

// typeName is the Markdown for a field's type, linking to named types.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == scenarioType.PkgPath() && t.Name() != "" {
		return fmt.Sprintf("[%s](#%s)", t.Name(), strings.ToLower(t.Name()))
	}
	switch t.Kind() {
	case reflect.Slice:
		return "list of " + typeName(t.Elem())
	case reflect.Map:
		return "map of " + typeName(t.Key()) + " to " + typeName(t.Elem())
	case reflect.Interface:
		return "any"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint64:
		return "integer"
	case reflect.Bool:
		return "boolean"
	}
	return t.Kind().String()
}

// constraintText describes a field's schema constraints in words.
func constraintText(c map[string]any) string {
	var parts []string
	if enum, ok := c["enum"].([]string); ok {
		vals := make([]string, len(enum))
		for i, v := range enum {
			vals[i] = "`" + v + "`"
		}
		if len(vals) == 1 {
			parts = append(parts, "Must be "+vals[0]+".")
		} else {
			parts = append(parts, "One of "+strings.Join(vals, ", ")+".")
		}
	}
	switch n, _ := c["minItems"].(int); {
	case n == 1:
		parts = append(parts, "Not empty.")
	case n > 1:
		parts = append(parts, fmt.Sprintf("At least %d items.", n))
	}
	for _, k := range []struct{ key, text string }{
		{"minimum", "Minimum %v."}, {"maximum", "Maximum %v."},
		{"minLength", "At least %v characters."}, {"maxLength", "At most %v characters."},
		{"pattern", "Pattern `%v`."},
	} {
		if v, ok := c[k.key]; ok {
			parts = append(parts, fmt.Sprintf(k.text, v))
		}
	}
	if items, ok := c["items"].(map[string]any); ok {
		if text := constraintText(items); text != "" {
			parts = append(parts, "Each item:"+text)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

// cell makes text safe in a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "\n\n", "<br><br>", "\n", " ").Replace(s)
}
