package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
	"github.com/trainersim/trainersim/sim/manifests"
)

// aliasBudget is how many YAML nodes alias expansion may add to a document
// beyond its own, so that a few lines of nested aliases ("billion laughs")
// cannot make the loader build an enormous tree.
const aliasBudget = 100_000

// maxQuoted is the longest value quoted whole in a message.
const maxQuoted = 40

// decoder checks one YAML document against the Go types and converts it to
// the JSON tree encoding/json decodes. It records where each field path is,
// so that later checks can report the line of the node they complain about.
type decoder struct {
	file string
	errs Errors
	// notes are what lint says of a valid file (validator.notef).
	notes Errors
	// warnings are what the machine lacks to run a valid file
	// (validator.warnf).
	warnings Errors
	// pos is the value node of each field path ("spec.steps[2].actor"); keys
	// is the key node of each path that is a mapping entry.
	pos, keys map[string]*yaml.Node
	// active holds the mappings and lists being walked, to detect aliases
	// that refer to a node containing them.
	active map[*yaml.Node]bool
	// budget is how many more nodes may be visited.
	budget   int
	exceeded bool
}

func newDecoder(file string) *decoder {
	return &decoder{
		file:   file,
		pos:    map[string]*yaml.Node{},
		keys:   map[string]*yaml.Node{},
		active: map[*yaml.Node]bool{},
	}
}

// errorf records a problem at node n (nil: no position).
func (d *decoder) errorf(n *yaml.Node, field, format string, args ...any) {
	e := &Error{File: d.file, Field: field, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// parse reads the single document of data. It returns nil, having recorded
// why, when data is not exactly one YAML document whose root is a mapping.
func (d *decoder) parse(data []byte) (root *yaml.Node) {
	docs, err := manifests.Documents(data)
	switch {
	case err != nil:
		d.yamlError(err, data)
		return nil
	case len(docs) == 0:
		d.errorf(nil, "", "empty file: a scenario file holds one Scenario")
		return nil
	case manifests.Empty(docs[0]):
		d.errorf(docs[0], "", "empty document: a scenario file holds one Scenario")
		return nil
	}
	root = docs[0].Content[0]
	// Further documents are an error unless empty (a trailing "---"; a
	// document that says null is one).
	for _, next := range docs[1:] {
		if len(next.Content) > 0 && !(isNull(next.Content[0]) && next.Content[0].Value == "") {
			d.errorf(next.Content[0], "", "a second YAML document: a scenario file holds exactly one Scenario")
			return nil
		}
	}
	d.budget = 2*countNodes(root, 0) + aliasBudget
	if root.Kind != yaml.MappingNode {
		d.errorf(root, "", "a scenario must be a mapping, found %s", describe(root))
		return nil
	}
	return root
}

// yamlError records a YAML parse error at the position the parser gives
// (go.yaml.in/yaml/v4's LoadError). For an indentation mistake the parser
// names where the broken block begins; the line that broke it is the first
// that lines up with nothing (misindented), and that is what is reported.
func (d *decoder) yamlError(err error, data []byte) {
	e := &Error{File: d.file}
	msg := err.Error()
	var le *yaml.LoadError
	if errors.As(err, &le) {
		msg = le.Message
		e.Line, e.Column = le.Mark.Line, le.Mark.Column
		// An unclosed flow mapping or list: where it begins, not where
		// the parser gave up (the end of the file, say).
		if what, ok := strings.CutPrefix(le.ContextMsg, "while parsing a flow "); ok && le.ContextMark.Line > 0 {
			e.Line, e.Column = le.ContextMark.Line, le.ContextMark.Column
			msg += ": the flow " + what + " that begins here is not closed"
		}
		// A reader's error (invalid UTF-8, a control character) has no
		// position: the first such byte is it.
		if off := invalidText(data); e.Line == 0 && off >= 0 {
			e.Line, e.Column = offsetPosition(data, off)
		}
		if strings.HasPrefix(msg, "did not find expected key") || strings.HasPrefix(msg, "did not find expected '-' indicator") {
			from := le.ContextMark.Line
			if from == 0 {
				from = e.Line
			}
			if line, col, what, ok := misindented(data); ok && line >= from {
				e.Line, e.Column = line, col
				msg = what + " (the parser: " + msg + ")"
			}
		}
	}
	e.Message = "invalid YAML: " + msg
	d.errs = append(d.errs, e)
}

// offsetPosition returns the 1-based line and column of a byte offset; 0, 0
// for a negative offset.
func offsetPosition(data []byte, off int) (line, col int) {
	if off < 0 || off > len(data) {
		return 0, 0
	}
	line = bytes.Count(data[:off], []byte("\n")) + 1
	col = utf8.RuneCount(data[bytes.LastIndexByte(data[:off], '\n')+1:off]) + 1
	return line, col
}

// invalidText returns the offset of the first byte that is not valid UTF-8
// or is a control character YAML does not allow, or -1.
func invalidText(data []byte) int {
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 {
			return off
		}
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (r >= 0x7f && r <= 0x9f && r != 0x85) ||
			(r >= 0xd800 && r <= 0xdfff) || r == 0xfffe || r == 0xffff {
			return off
		}
		off += size
	}
	return -1
}

// countNodes counts the nodes of the tree under n without following aliases.
func countNodes(n *yaml.Node, depth int) int {
	if n == nil || depth > 20_000 {
		return 0
	}
	c := 1
	for _, child := range n.Content {
		c += countNodes(child, depth+1)
	}
	return c
}

// spend takes one node from the budget; false once it is exhausted.
func (d *decoder) spend(n *yaml.Node, field string) bool {
	if d.budget > 0 {
		d.budget--
		return true
	}
	if !d.exceeded {
		d.exceeded = true
		d.errorf(n, field, "document too large: aliases expand to more than %d nodes", aliasBudget)
	}
	return false
}

// deref follows aliases and spends one node of the budget. It returns nil,
// having recorded why, for an alias to a node that contains it or when the
// budget is exhausted.
func (d *decoder) deref(n *yaml.Node, field string) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if n.Alias == nil || i > 100 {
			d.errorf(n, field, "invalid alias *%s", n.Value)
			return nil
		}
		if d.active[n.Alias] {
			d.errorf(n, field, "alias *%s refers to a node that contains it", n.Value)
			return nil
		}
		n = n.Alias
	}
	if n == nil || !d.spend(n, field) {
		return nil
	}
	return n
}

// resolve follows aliases without checks or cost, to look at a value.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// entry is one key and value of a mapping.
type entry struct{ key, value *yaml.Node }

// entries returns the entries of mapping n with merge keys (<<) expanded,
// recording duplicate and non-scalar keys. Explicit keys win over merged
// ones, and earlier merged mappings over later ones, as YAML specifies.
func (d *decoder) entries(n *yaml.Node, field string) []entry {
	var out, merged []entry
	first := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.deref(n.Content[i], field)
		if k == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, field, "a key must be a string, found %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merged = append(merged, d.merge(n.Content[i+1], field)...)
			continue
		}
		if prev, dup := first[k.Value]; dup {
			d.errorf(k, field, "duplicate key %s (first at line %d)", quote(k.Value), prev.Line)
			continue
		}
		first[k.Value] = k
		out = append(out, entry{k, n.Content[i+1]})
	}
	for _, e := range merged {
		if _, ok := first[e.key.Value]; !ok {
			first[e.key.Value] = e.key
			out = append(out, e)
		}
	}
	return out
}

// merge returns the entries a merge key's value contributes.
func (d *decoder) merge(v *yaml.Node, field string) []entry {
	alias := v
	v = d.deref(v, field)
	if v == nil {
		return nil
	}
	d.active[v] = true
	defer delete(d.active, v)
	switch v.Kind {
	case yaml.MappingNode:
		return d.entries(v, field)
	case yaml.SequenceNode:
		var out []entry
		seen := map[string]bool{}
		for _, item := range v.Content {
			m := d.deref(item, field)
			if m == nil {
				continue
			}
			if m.Kind != yaml.MappingNode {
				d.errorf(item, field, "a merge key (<<) takes a mapping or a list of mappings, found a list of %s", describe(m))
				continue
			}
			d.active[m] = true
			for _, e := range d.entries(m, field) {
				if !seen[e.key.Value] {
					seen[e.key.Value] = true
					out = append(out, e)
				}
			}
			delete(d.active, m)
		}
		return out
	default:
		d.errorf(alias, field, "a merge key (<<) takes a mapping or a list of mappings, found %s", describe(v))
		return nil
	}
}

// structField is what the walk needs of a struct field.
type structField struct {
	name     string
	index    int // in the struct, for reflect.Value.Field
	typ      reflect.Type
	required bool
}

// structInfo lists the fields of a struct type by json name.
type structInfo struct {
	fields []structField
	byName map[string]structField
}

var structInfos sync.Map // reflect.Type -> *structInfo

func infoOf(t reflect.Type) *structInfo {
	if v, ok := structInfos.Load(t); ok {
		return v.(*structInfo)
	}
	info := &structInfo{byName: map[string]structField{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		sf := structField{name: name, index: i, typ: f.Type, required: !hasOption(opts, "omitempty")}
		info.fields = append(info.fields, sf)
		info.byName[name] = sf
	}
	structInfos.Store(t, info)
	return info
}

func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

var (
	objectType      = reflect.TypeFor[v1alpha1.Object]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// freeForm reports whether values of t are not checked: Object, any and
// maps of any.
func freeForm(t reflect.Type) bool {
	return t == objectType || t.Kind() == reflect.Interface ||
		(t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Interface)
}

// walk checks node n against type t at field path.
func (d *decoder) walk(n *yaml.Node, t reflect.Type, path string) {
	d.pos[path] = n
	n = d.deref(n, path)
	if isNull(n) {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case freeForm(t):
		if t.Kind() == reflect.Map && n.Kind != yaml.MappingNode {
			d.wrongKind(n, path, "a mapping")
			return
		}
		d.free(n, path)
		return
	case t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(unmarshalerType):
		// A scalar with its own JSON form: v1alpha1.Duration or Orders.
		d.unmarshaler(n, t, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.wrongKind(n, path, "a mapping")
			return
		}
		d.active[n] = true
		defer delete(d.active, n)
		info := infoOf(t)
		// present holds the fields given, and the fields an unknown key
		// looks like a misspelling of, so that a typo in a required field
		// is reported once.
		present := map[string]bool{}
		for _, e := range d.entries(n, path) {
			f, ok := info.byName[e.key.Value]
			if !ok {
				hint := ""
				if like := suggest(e.key.Value, info); like != "" {
					hint = fmt.Sprintf(" (did you mean %q?)", like)
					present[like] = true
				}
				d.errorf(e.key, path, "unknown field %s%s", quote(e.key.Value), hint)
				continue
			}
			fp := join(path, f.name)
			d.keys[fp] = e.key
			present[f.name] = true
			if f.required && isNull(resolve(e.value)) {
				d.errorf(e.key, fp, "required field has no value")
				continue
			}
			d.walk(e.value, f.typ, fp)
		}
		for _, f := range info.fields {
			if f.required && !present[f.name] {
				d.errorf(n, path, "missing required field %s", quote(f.name))
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.wrongKind(n, path, "a list")
			return
		}
		d.active[n] = true
		defer delete(d.active, n)
		for i, item := range n.Content {
			d.walk(item, t.Elem(), index(path, i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.wrongKind(n, path, "a mapping")
			return
		}
		d.active[n] = true
		defer delete(d.active, n)
		for _, e := range d.entries(n, path) {
			kp := freeKey(path, e.key.Value)
			d.keys[kp] = e.key
			d.walk(e.value, t.Elem(), kp)
		}
	case reflect.String:
		if !isString(n) {
			d.wrongKind(n, path, "a string")
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.wrongKind(n, path, "true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			d.wrongKind(n, path, "an integer")
			return
		}
		v := reflect.New(t)
		if err := n.Decode(v.Interface()); err != nil {
			d.errorf(n, path, "integer %s is out of range", quote(n.Value))
		}
	default:
		// A type this walk does not know: a programming error that the
		// tests of this package catch (TestEveryTypeIsWalked).
		d.errorf(n, path, "internal error: cannot check a value of type %s", t)
	}
}

// isString reports whether n is a scalar that decodes to a string.
func isString(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	switch n.ShortTag() {
	case "!!str", "!!timestamp":
		return true
	}
	return false
}

// unmarshaler checks a scalar of a type with its own UnmarshalJSON by
// running it, so that its error is reported at the node's line.
func (d *decoder) unmarshaler(n *yaml.Node, t reflect.Type, path string) {
	var (
		b   []byte
		err error
	)
	switch {
	case isString(n):
		b, err = json.Marshal(n.Value)
	case t == reflect.TypeFor[v1alpha1.Duration]():
		d.errorf(n, path, "expected a duration such as 60s or 1m30s, found %s", describe(n))
		return
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int":
		b = []byte(n.Value)
	default:
		// v1alpha1.Orders: "all" or a number.
		d.errorf(n, path, "expected all or a positive number, found %s", describe(n))
		return
	}
	if err == nil {
		err = reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(b)
	}
	if err != nil {
		d.errorf(n, path, "%v", err)
	}
}

func (d *decoder) wrongKind(n *yaml.Node, path, want string) {
	hint := ""
	if want == "a string" && n.Kind == yaml.ScalarNode {
		hint = " (quote it to make it a string)"
	}
	d.errorf(n, path, "expected %s, found %s%s", want, describe(n), hint)
}

// free records the positions of a free-form value and checks that its
// scalars have a JSON form. It does not follow aliases: convert does.
func (d *decoder) free(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		d.active[n] = true
		defer delete(d.active, n)
		for _, e := range d.entries(n, path) {
			kp := freeKey(path, e.key.Value)
			d.keys[kp], d.pos[kp] = e.key, e.value
			if e.value.Kind != yaml.AliasNode && d.spend(e.value, kp) {
				d.free(e.value, kp)
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			ip := index(path, i)
			d.pos[ip] = item
			if item.Kind != yaml.AliasNode && d.spend(item, ip) {
				d.free(item, ip)
			}
		}
	case yaml.ScalarNode:
		if _, err := scalar(n); err != nil {
			d.errorf(n, path, "%v", err)
		}
	}
}

// convert returns the JSON tree of n: map[string]any, []any, string,
// int64, uint64, float64, bool or nil.
func (d *decoder) convert(n *yaml.Node, path string) any {
	n = d.deref(n, path)
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		d.active[n] = true
		defer delete(d.active, n)
		m := map[string]any{}
		for _, e := range d.entries(n, path) {
			m[e.key.Value] = d.convert(e.value, freeKey(path, e.key.Value))
		}
		return m
	case yaml.SequenceNode:
		d.active[n] = true
		defer delete(d.active, n)
		s := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			s = append(s, d.convert(item, index(path, i)))
		}
		return s
	default:
		v, err := scalar(n)
		if err != nil {
			d.errorf(n, path, "%v", err)
		}
		return v
	}
}

// scalar returns the JSON value of a scalar node.
func scalar(n *yaml.Node) (any, error) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return nil, nil
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("invalid boolean %s", quote(n.Value))
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, nil
		}
		var u uint64
		if err := n.Decode(&u); err == nil {
			return u, nil
		}
		return nil, fmt.Errorf("invalid or out-of-range integer %s", quote(n.Value))
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("invalid number %s", quote(n.Value))
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%s is not a number JSON can hold", quote(n.Value))
		}
		return f, nil
	default:
		return nil, fmt.Errorf("unsupported YAML tag %s", tag)
	}
}

// DescribeNode says what a YAML node holds, for messages: "a list",
// "string \"x\"", "integer 5". simctl migrate words its errors with it too.
func DescribeNode(n *yaml.Node) string { return describe(n) }

// describe says what a node is, for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	switch tag := n.ShortTag(); tag {
	case "!!str":
		return "string " + quote(n.Value)
	case "!!int":
		return "integer " + n.Value
	case "!!float":
		return "number " + n.Value
	case "!!bool":
		return "boolean " + n.Value
	case "!!null":
		return "null"
	case "!!timestamp":
		return "timestamp " + n.Value
	default:
		return tag + " " + quote(n.Value)
	}
}

// quote quotes s for a message, shortened when long.
func quote(s string) string {
	if r := []rune(s); len(r) > maxQuoted {
		s = string(r[:maxQuoted]) + "..."
	}
	return strconv.Quote(s)
}

// suggest returns the known field name that name differs from by case or
// by at most two edits, or "".
func suggest(name string, info *structInfo) string {
	names := make([]string, len(info.fields))
	for i, f := range info.fields {
		names[i] = f.name
	}
	return closest(name, names)
}

// closest returns the one of names within two edits of name, the nearest
// first; "" when none is, or name is too short to guess.
func closest(name string, names []string) string {
	if len(name) < 3 {
		return ""
	}
	best, bestDist := "", 3
	for _, n := range names {
		dist := editDistance(strings.ToLower(name), strings.ToLower(n))
		if dist < bestDist {
			best, bestDist = n, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, capped for long
// inputs (only small distances matter).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Field paths are spelled as sim/fieldpath prints them: spec.steps[2].actor,
// metadata.labels.area, and in free-form objects create.metadata.name or
// matchLabels["jobset.sigs.k8s.io/name"].

func join(path, name string) string { return fieldpath.AppendField(path, name) }

func index(path string, i int) string { return fieldpath.AppendIndex(path, i) }

// freeKey is the path of a key of a free-form mapping.
func freeKey(path, key string) string { return fieldpath.AppendField(path, key) }

// parent returns the path one level up: "" for a top-level field.
func parent(path string) string { return fieldpath.Parent(path) }

// node returns where to report a problem with path: the key of a mapping or
// list value (the line that names the field), the value of a scalar, or the
// nearest ancestor that has a position.
func (d *decoder) node(path string) *yaml.Node {
	for p := path; ; p = parent(p) {
		if n, ok := d.pos[p]; ok {
			if k, ok := d.keys[p]; ok && n.Kind != yaml.ScalarNode {
				return k
			}
			return n
		}
		if p == "" {
			return nil
		}
	}
}
