package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/trainersim/trainersim/sim/fieldpath"
	"github.com/trainersim/trainersim/sim/internal/smpmeta"
)

// leafKind says what a leaf is.
type leafKind int

const (
	// scalarLeaf is a string, number, boolean, or an empty object (such as
	// emptyDir: {}) whose presence is the value.
	scalarLeaf leafKind = iota
	// atomicLeaf is a list the strategic merge replaces whole.
	atomicLeaf
	// itemLeaf is an item of a keyed list that holds nothing but its key
	// (a scheduling gate, an image pull secret).
	itemLeaf
)

// leaf is one field of a flattened object.
type leaf struct {
	path  string
	kind  leafKind
	value any
	// canon is value's JSON encoding, for comparisons.
	canon string
}

// keyedList is a list merged by key, as found while flattening.
type keyedList struct {
	key string
	// items are the item paths in list order, and ids the rendered key
	// values in the same order.
	items, ids []string
}

// flat is an object flattened into leaves.
type flat struct {
	leaves map[string]*leaf
	// order is the paths of leaves in the order they were found.
	order []string
	lists map[string]*keyedList
}

func newFlat() *flat {
	return &flat{leaves: map[string]*leaf{}, lists: map[string]*keyedList{}}
}

// add flattens v, of the Go type meta describes, under prefix.
func (f *flat) add(prefix string, v any, meta strategicpatch.LookupPatchMeta) {
	f.walk(prefix, v, meta)
}

func (f *flat) emit(path string, kind leafKind, v any) {
	if _, dup := f.leaves[path]; !dup {
		f.order = append(f.order, path)
	}
	f.leaves[path] = &leaf{path: path, kind: kind, value: v, canon: canonical(v)}
}

// walk flattens an object's fields. Nulls are absent fields.
func (f *flat) walk(prefix string, v any, meta strategicpatch.LookupPatchMeta) {
	switch v := v.(type) {
	case nil:
	case map[string]any:
		if len(v) == 0 {
			if prefix != "" && presenceMatters(meta) {
				f.emit(prefix, scalarLeaf, v)
			}
			return
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			child := v[k]
			path := fieldpath.AppendField(prefix, k)
			if list, ok := child.([]any); ok {
				f.list(path, list, meta, k)
				continue
			}
			f.walk(path, child, smpmeta.Field(meta, k))
		}
	case []any:
		// A list that is not a field of an object: the root only.
		f.emit(prefix, atomicLeaf, v)
	default:
		f.emit(prefix, scalarLeaf, v)
	}
}

// list flattens the list field name of an object whose type meta describes.
func (f *flat) list(path string, list []any, meta strategicpatch.LookupPatchMeta, name string) {
	elem, key := smpmeta.Slice(meta, name)
	if key == "" || !smpmeta.AllObjects(list) {
		if len(list) > 0 {
			f.emit(path, atomicLeaf, list)
		}
		return
	}
	kl := &keyedList{key: key}
	f.lists[path] = kl
	for i, raw := range list {
		item := raw.(map[string]any)
		id := fieldpath.KeyValue(item[key])
		ok := id != ""
		itemPath := fieldpath.AppendItem(path, key, id)
		if !ok {
			// An item without its key cannot be matched; name it by index.
			id = "#" + strconv.Itoa(i)
			itemPath = fieldpath.AppendIndex(path, i)
		}
		kl.items = append(kl.items, itemPath)
		kl.ids = append(kl.ids, id)
		if len(item) == 1 && ok {
			f.emit(itemPath, itemLeaf, item)
			continue
		}
		rest := make(map[string]any, len(item))
		for k, v := range item {
			if k != key || !ok {
				rest[k] = v
			}
		}
		f.walk(itemPath, rest, elem)
	}
}

// presenceMatters reports whether an empty object of the type meta
// describes says something: an optional struct (a pointer, such as
// emptyDir: {}) does, a struct value or a map does not (resources: {} and
// metadata: {} are what the trainer's conversion writes for zero values).
// An empty object of an unknown type is kept.
func presenceMatters(meta strategicpatch.LookupPatchMeta) bool {
	s, ok := meta.(strategicpatch.PatchMetaFromStruct)
	if !ok || s.T == nil {
		return true
	}
	return s.T.Kind() == reflect.Pointer
}

// canonical is the compact JSON of a decoded value (map keys sorted).
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// decode turns JSON into maps, lists and json.Numbers (so that large
// integers keep their digits).
func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// toMap marshals v (a typed object or an apply configuration) and decodes it
// as a JSON object.
func toMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d, err := decode(data)
	if err != nil {
		return nil, err
	}
	m, ok := d.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected a JSON object, got %s", strings.TrimSpace(string(data)))
	}
	return m, nil
}

// hasUnder reports whether a leaf lies strictly under path p.
func (f *flat) hasUnder(p string) bool {
	for q := range f.leaves {
		if strings.HasPrefix(q, p+".") || strings.HasPrefix(q, p+"[") {
			return true
		}
	}
	return false
}

// compact drops, for display, the empty objects of a value whose presence
// says nothing (see presenceMatters), and the nulls.
func compact(v any, meta strategicpatch.LookupPatchMeta) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, child := range v {
			var cm strategicpatch.LookupPatchMeta
			if list, ok := child.([]any); ok {
				elem, _ := smpmeta.Slice(meta, k)
				items := make([]any, len(list))
				for i, item := range list {
					items[i] = compact(item, elem)
				}
				out[k] = items
				continue
			}
			cm = smpmeta.Field(meta, k)
			c := compact(child, cm)
			if c == nil {
				continue
			}
			if m, ok := c.(map[string]any); ok && len(m) == 0 && !presenceMatters(cm) {
				continue
			}
			out[k] = c
		}
		return out
	default:
		return v
	}
}
