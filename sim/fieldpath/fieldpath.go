// Package fieldpath is the one spelling of a field path in trainersim: the
// paths reports print (a write's mutations, a JobSet's changes in the
// timeline), simctl explain prints (fields, overrides, overlaps), the loader
// prints in its error messages, and scenarios write in owners[].field and in
// exact. A path copied from any of them can be pasted into any other. It has
// one parser (Parse) and one printer (Path.String and the Append functions,
// for code that builds paths as it walks an object), and it reads field
// ownership out of managedFields (Owners), so that the loader can check
// paths without running anything.
//
// # Syntax
//
// For example (one line):
//
//	spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec.replicatedJobs[name=node].template.spec.template.spec.nodeSelector["node.kubernetes.io/instance-type"]
//
// The parts of a path:
//
//   - Field names and map keys are separated by dots. A name that is not a
//     plain name (letters, digits, "_" and "-", not starting with a digit or
//     "-") is written as a Go-quoted string in brackets: labels with dots or
//     slashes, nodeSelector["node.kubernetes.io/instance-type"],
//     limits["nvidia.com/gpu"]. The parser also takes such a name after a
//     dot when it has no ".", "[", "]", "\"", "=", "," or space; the printer
//     always quotes it.
//   - A list item is selected by the value of its key field, [name=node], or
//     of several, [containerPort=8080,protocol=TCP]. A value that is empty
//     or contains "]", "\"", "," or a character that is not printed as it
//     is (a space at either end, a control character) is Go-quoted:
//     [name="a]b"]. A key that is a number or a boolean on the server is
//     written as it is, [containerPort=8080], and matches either way.
//   - A list item without a key is selected by its position: args[0].
//
// # What it cannot name
//
// An item of a list of scalars kept as a set (finalizers), which
// managedFields record by value (v:), and key field names that are not plain
// names.
package fieldpath

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kind says what an Element selects.
type Kind int

const (
	// FieldKind is a field of an object or a key of a map.
	FieldKind Kind = iota
	// KeyKind is a list item selected by the values of its key fields.
	KeyKind
	// IndexKind is a list item selected by its position.
	IndexKind
)

// KeyField is one field of a list item's key and its value, as written: a
// string as it is, a number or a boolean as JSON.
type KeyField struct {
	Name  string
	Value string
}

// Element is one step of a Path.
type Element struct {
	// Kind says which of the other fields is set.
	Kind Kind
	// Name is the field name or map key of a FieldKind element.
	Name string
	// Key are the key fields of a KeyKind element, in the order written.
	Key []KeyField
	// Index is the position of an IndexKind element, from 0.
	Index int
}

// Field is the element of a field or map key.
func Field(name string) Element { return Element{Kind: FieldKind, Name: name} }

// Item is the element of the list item whose key field name has value.
func Item(name, value string) Element {
	return Element{Kind: KeyKind, Key: []KeyField{{Name: name, Value: value}}}
}

// Index is the element of the list item at position i.
func Index(i int) Element { return Element{Kind: IndexKind, Index: i} }

// Path is a parsed field path, from the root of an object.
type Path []Element

// String prints p in the one syntax; Parse reads it back.
func (p Path) String() string {
	var b strings.Builder
	for _, e := range p {
		appendElement(&b, e)
	}
	return b.String()
}

// Child returns a new path: p followed by e.
func (p Path) Child(e ...Element) Path {
	return append(slices.Clip(p), e...)
}

// AppendField appends a field name or map key to a printed path (prefix ""
// is the root).
func AppendField(prefix, name string) string { return appendTo(prefix, Field(name)) }

// AppendItem appends the list item whose key field name has value.
func AppendItem(prefix, name, value string) string { return appendTo(prefix, Item(name, value)) }

// KeyValue is a list item's key field value as a path spells it (Item,
// AppendItem): a string as it is, nothing for none, any other value as
// compact JSON (encoding/json: numbers as the API server writes them).
func KeyValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// AppendIndex appends the list item at position i.
func AppendIndex(prefix string, i int) string { return appendTo(prefix, Index(i)) }

func appendTo(prefix string, e Element) string {
	var b strings.Builder
	b.WriteString(prefix)
	appendElement(&b, e)
	return b.String()
}

// plainName is a name written after a dot without quotes.
var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func appendElement(b *strings.Builder, e Element) {
	switch e.Kind {
	case FieldKind:
		if !plainName.MatchString(e.Name) {
			b.WriteString("[" + strconv.Quote(e.Name) + "]")
			return
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.Name)
	case KeyKind:
		b.WriteByte('[')
		for i, k := range e.Key {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(k.Name + "=" + quoteValue(k.Value))
		}
		b.WriteByte(']')
	case IndexKind:
		b.WriteString("[" + strconv.Itoa(e.Index) + "]")
	}
}

// quoteValue writes a key value as it is unless the parser would read it
// otherwise.
func quoteValue(v string) string {
	if v == "" || strings.ContainsAny(v, `]",`) || strconv.Quote(v) != `"`+v+`"` ||
		strings.TrimSpace(v) != v {
		return strconv.Quote(v)
	}
	return v
}

// Parent returns the printed path of what holds the field or item a
// printed path names: "" for a top-level field, and for a path that does
// not parse.
func Parent(path string) string {
	p, err := Parse(path)
	if err != nil || len(p) == 0 {
		return ""
	}
	return p[:len(p)-1].String()
}

// Join appends rel, a printed path relative to prefix, to prefix; a rel
// that does not parse is appended as a field name.
func Join(prefix, rel string) string {
	p, err := Parse(rel)
	if err != nil {
		return AppendField(prefix, rel)
	}
	for _, e := range p {
		prefix = appendTo(prefix, e)
	}
	return prefix
}

// Last is the name of the last element of a printed path when it is a
// field or map key; "" otherwise.
func Last(path string) string {
	p, err := Parse(path)
	if err != nil || len(p) == 0 || p[len(p)-1].Kind != FieldKind {
		return ""
	}
	return p[len(p)-1].Name
}

// nameStop are the characters that end an unquoted name.
const nameStop = ".[]\"=, \t\r\n"

// Parse reads a path written in the syntax of the package documentation.
// Its errors quote the whole path and say what is wrong.
func Parse(s string) (Path, error) {
	if s == "" {
		return nil, errors.New("empty path")
	}
	fail := func(format string, args ...any) (Path, error) {
		return nil, fmt.Errorf("invalid path %q: %s", s, fmt.Sprintf(format, args...))
	}
	var p Path
	for rest := s; rest != ""; {
		switch {
		case rest[0] == '[':
			e, after, err := bracket(rest[1:])
			if err != nil {
				return fail("%v", err)
			}
			p, rest = append(p, e), after
		case len(p) == 0 || rest[0] == '.':
			if len(p) > 0 {
				rest = rest[1:]
			}
			end := strings.IndexAny(rest, nameStop)
			if end < 0 {
				end = len(rest)
			}
			name := rest[:end]
			if name == "" {
				return fail("empty field name")
			}
			if end < len(rest) && rest[end] != '.' && rest[end] != '[' {
				return fail("unexpected %q after %q: a name with such characters is quoted, [\"...\"]", rest[end], name)
			}
			p, rest = append(p, Field(name)), rest[end:]
		default:
			return fail("expected . or [ after %s", p)
		}
	}
	return p, nil
}

// bracket reads the rest of one [...] element, s being what follows the
// [, and returns what follows the ].
func bracket(s string) (Element, string, error) {
	switch {
	case strings.HasPrefix(s, `"`):
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return Element{}, "", fmt.Errorf("unterminated quoted name at %s", s)
		}
		name, _ := strconv.Unquote(q)
		after, ok := strings.CutPrefix(s[len(q):], "]")
		if !ok {
			return Element{}, "", fmt.Errorf("expected ] after the quoted name %s", q)
		}
		return Field(name), after, nil
	case s != "" && s[0] >= '0' && s[0] <= '9':
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return Element{}, "", errors.New("missing ]")
		}
		i, err := strconv.Atoi(s[:end])
		if err != nil {
			return Element{}, "", fmt.Errorf("invalid list position [%s]: want [0], [1], ...", s[:end])
		}
		return Index(i), s[end+1:], nil
	case strings.HasPrefix(s, "]"):
		return Element{}, "", errors.New(`empty []: want [key=value], [0] or ["name"]`)
	}
	e := Element{Kind: KeyKind}
	rest := s
	for {
		end := strings.IndexAny(rest, "=],")
		if end < 0 {
			return Element{}, "", errors.New("missing ]")
		}
		name := rest[:end]
		switch {
		case rest[end] != '=':
			return Element{}, "", fmt.Errorf("[%s]: want [key=value] for a list item, or [%s] for a field or map key", name, strconv.Quote(name))
		case name == "":
			return Element{}, "", errors.New("empty key name before =")
		case strings.ContainsAny(name, nameStop):
			return Element{}, "", fmt.Errorf("invalid key name %q", name)
		}
		for _, k := range e.Key {
			if k.Name == name {
				return Element{}, "", fmt.Errorf("key %q twice in one item selector", name)
			}
		}
		rest = rest[end+1:]
		var value string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return Element{}, "", fmt.Errorf("unterminated quoted value at %s", rest)
			}
			value, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			end := strings.IndexAny(rest, ",]")
			if end < 0 {
				return Element{}, "", errors.New("missing ]")
			}
			if end == 0 {
				return Element{}, "", fmt.Errorf("empty value of key %s (an empty string is written %s=\"\")", name, name)
			}
			value, rest = rest[:end], rest[end:]
		}
		e.Key = append(e.Key, KeyField{Name: name, Value: value})
		switch {
		case strings.HasPrefix(rest, "]"):
			return e, rest[1:], nil
		case strings.HasPrefix(rest, ","):
			rest = rest[1:]
		default:
			return Element{}, "", fmt.Errorf("expected , or ] after the value of key %s", name)
		}
	}
}

// Selects reports whether a KeyKind or IndexKind element selects item, the
// item at position i of a list (a decoded JSON value). Key values match a
// string as it is, anything else by its JSON form.
func (e Element) Selects(item any, i int) bool {
	switch e.Kind {
	case IndexKind:
		return e.Index == i
	case KeyKind:
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for _, k := range e.Key {
			v, ok := m[k.Name]
			if !ok || !sameValue(k.Value, v) {
				return false
			}
		}
		return true
	}
	return false
}

// Lookup returns the value p names in v, a decoded JSON or YAML value
// (maps, lists, scalars): a list item selected by key is the first that has
// the key's values. Its error says how far p goes in v and why not further.
func Lookup(v any, p Path) (any, error) {
	for i, e := range p {
		at := p[:i].String()
		if at == "" {
			at = "the root"
		}
		switch node := v.(type) {
		case map[string]any:
			if e.Kind != FieldKind {
				return nil, fmt.Errorf("%s is a mapping, not a list: name one of its fields", at)
			}
			child, ok := node[e.Name]
			if !ok {
				return nil, fmt.Errorf("%s has no field %s", at, strconv.Quote(e.Name))
			}
			v = child
		case []any:
			if e.Kind == FieldKind {
				return nil, fmt.Errorf("%s is a list: select an item by key, %s, or by position, %s", at, p[:i].Child(keyOf(node)).String(), p[:i].Child(Index(0)).String())
			}
			found := false
			for j, item := range node {
				if e.Selects(item, j) {
					v, found = item, true
					break
				}
			}
			switch {
			case found:
			case e.Kind == IndexKind:
				return nil, fmt.Errorf("%s has %d items: no %s", at, len(node), Path{e})
			default:
				sel := Path{e}.String()
				return nil, fmt.Errorf("no item of %s has %s", at, sel[1:len(sel)-1])
			}
		default:
			return nil, fmt.Errorf("%s is a single value: nothing is under it", at)
		}
	}
	return v, nil
}

// keyOf suggests a key for the first item of a list, for messages.
func keyOf(list []any) Element {
	if len(list) > 0 {
		if m, ok := list[0].(map[string]any); ok {
			for _, k := range []string{"name", "manager", "key", "mountPath", "containerPort"} {
				if v, ok := m[k]; ok {
					if s, ok := v.(string); ok {
						return Item(k, s)
					}
					if b, err := json.Marshal(v); err == nil {
						return Item(k, string(b))
					}
				}
			}
		}
	}
	return Item("name", "...")
}

// sameValue compares a written key value with a decoded one.
// SameJSON compares two decoded values as JSON: a scenario's (from YAML,
// whole numbers as int64), a schema's or an object's (from JSON, float64).
func SameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

func sameValue(written string, v any) bool {
	if s, ok := v.(string); ok {
		return s == written
	}
	b, err := json.Marshal(v)
	return err == nil && string(b) == written
}

// fieldsV1 returns the FieldsV1 key of each element: f:name,
// k:{"name":"value"} (fields sorted by name, compact JSON, as the API
// server writes them), i:N.
func (p Path) fieldsV1() []string {
	out := make([]string, len(p))
	for i, e := range p {
		switch e.Kind {
		case FieldKind:
			out[i] = "f:" + e.Name
		case KeyKind:
			fields := map[string]string{}
			for _, k := range e.Key {
				fields[k.Name] = k.Value
			}
			// encoding/json sorts map keys, as structured-merge-diff sorts key fields.
			b, _ := json.Marshal(fields)
			out[i] = "k:" + string(b)
		case IndexKind:
			out[i] = "i:" + strconv.Itoa(e.Index)
		}
	}
	return out
}

// Owners returns the field managers, sorted and without repetition, whose
// FieldsV1 set contains p: the field itself or anything under it. A manager
// whose set holds a field above p as a leaf owns p too when no set holds
// anything inside that field: the field is then an atomic list or map
// (tolerations, or a nodeSelector in a JobSet), owned whole, and a report
// names a part of it (tolerations[0].key). Entries of one manager with
// different operations (Apply and Update) count as one.
func Owners(entries []metav1.ManagedFieldsEntry, p Path) ([]string, error) {
	keys := p.fieldsV1()
	// granular[d] says that some set holds fields inside the node p's
	// first d elements lead to.
	granular := make([]bool, len(keys)+1)
	type leaf struct {
		manager string
		depth   int
	}
	var out []string
	var leaves []leaf
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if err := json.Unmarshal(e.FieldsV1.Raw, &set); err != nil {
			return nil, fmt.Errorf("failed to decode managedFields of %s: %w", e.Manager, err)
		}
		node, d := set, 0
		for ; d < len(keys); d++ {
			if hasFields(node) {
				granular[d] = true
			}
			child, ok := lookup(node, keys[d])
			if !ok {
				break
			}
			node = child
		}
		switch {
		case d == len(keys):
			out = append(out, e.Manager)
		case d > 0 && !hasFields(node):
			leaves = append(leaves, leaf{e.Manager, d})
		}
	}
	for _, l := range leaves {
		if !granular[l.depth] {
			out = append(out, l.manager)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// hasFields reports whether a FieldsV1 node holds anything but itself (".").
func hasFields(node map[string]any) bool {
	for k := range node {
		if k != "." {
			return true
		}
	}
	return false
}

// lookup finds key in a FieldsV1 node. An item key also matches a key of
// the set whose fields are equal after decoding, so that a number the
// server keeps as a number matches [k=3].
func lookup(node map[string]any, key string) (map[string]any, bool) {
	if child, ok := node[key].(map[string]any); ok {
		return child, true
	}
	if !strings.HasPrefix(key, "k:") {
		return nil, false
	}
	want := map[string]string{}
	if err := json.Unmarshal([]byte(key[2:]), &want); err != nil {
		return nil, false
	}
	for k, v := range node {
		child, ok := v.(map[string]any)
		if !ok || !strings.HasPrefix(k, "k:") {
			continue
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal([]byte(k[2:]), &got); err != nil || len(got) != len(want) {
			continue
		}
		if sameKey(want, got) {
			return child, true
		}
	}
	return nil, false
}

func sameKey(want map[string]string, got map[string]json.RawMessage) bool {
	for k, w := range want {
		raw, ok := got[k]
		if !ok {
			return false
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			if s != w {
				return false
			}
			continue
		}
		if !bytes.Equal(bytes.TrimSpace(raw), []byte(w)) { // a number or a boolean
			return false
		}
	}
	return true
}
