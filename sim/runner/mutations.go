package runner

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
)

// mergeKeys names, by the field name of a list, the field by which its
// items are matched. Items of other lists are matched by index.
var mergeKeys = map[string]string{
	"runtimePatches": "manager",
	"containers":     "name",
	"initContainers": "name",
	"volumes":        "name",
	"env":            "name",
	"volumeMounts":   "name",
	"replicatedJobs": "name",
}

// serverMetadata are the metadata fields the server owns: never compared.
var serverMetadata = []string{"resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// mutations shows what the server (defaulting and the mutating admission
// webhooks) changed in a successful write: it compares what the write sent
// (p.sent) with the object the server returned.
//
// The rule depends on what the writer sent:
//
//   - create and update send a whole object: everything is compared, both
//     ways, except status and the metadata the server owns
//     (resourceVersion, uid, generation, creationTimestamp, managedFields,
//     selfLink, deletion fields);
//   - apply and merge patches send part of an object: only the leaves sent
//     are compared, plus the keys the server added directly inside a list
//     item the writer sent that is matched by merge key (the time the
//     trainer's webhook stamps on a runtimePatches entry);
//   - JSON patches: the value of every add and replace operation is
//     compared, as a merge patch's, with what is stored at its path ("-"
//     is the last item); test, remove, move and copy are not.
//
// List items are matched by merge key (mergeKeys), else by index. The
// changes come sorted by path.
//
// Limits: the returned object is compared, not the request the webhooks
// saw, so under apply a key another manager set earlier inside the same
// list item shows as added, and a value an earlier write stored that this
// write sends again is not a change. Items of index-matched lists
// beyond those sent are not compared under apply and patches (another
// manager's, or the server's). A patch with a selector is compared with
// the last object patched.
func mutations(p *prepared, stored map[string]any) []results.FieldChange {
	if p.sent == nil || stored == nil {
		return nil
	}
	// JSON's values, and a copy: the server fields are deleted from it.
	sent := normalize(p.sent)
	got, _ := normalize(stored).(map[string]any)
	withoutServerFields(got)
	d := &differ{}
	verb, w := p.verb, &p.write
	switch {
	case verb.Body == v1alpha1.WholeObject:
		d.whole = true
		s, _ := sent.(map[string]any)
		withoutServerFields(s)
		d.compare("", "", s, got, true, false)
	case verb.Body == v1alpha1.PartialObject || verb.Body == v1alpha1.PatchBody && w.PatchType == v1alpha1.PatchMerge:
		s, _ := sent.(map[string]any)
		withoutServerFields(s)
		d.compare("", "", s, got, true, false)
	case verb.Body == v1alpha1.PatchBody && w.PatchType == v1alpha1.PatchJSON:
		ops, _ := sent.([]any)
		for _, op := range ops {
			d.jsonPatchOp(op, got)
		}
	}
	slices.SortStableFunc(d.out, func(a, b results.FieldChange) int { return strings.Compare(a.Path, b.Path) })
	return d.out
}

// withoutServerFields deletes status and the server's metadata from obj.
func withoutServerFields(obj map[string]any) {
	delete(obj, "status")
	deleteServerMetadata(obj)
}

// deleteServerMetadata deletes the metadata the server owns from obj.
func deleteServerMetadata(obj map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, f := range serverMetadata {
			delete(md, f)
		}
	}
}

// differ collects FieldChanges.
type differ struct {
	// whole compares both ways: what was stored and not sent is added.
	whole bool
	out   []results.FieldChange
}

func (d *differ) add(kind, path string, sent, stored any) {
	c := results.FieldChange{Path: path, Kind: kind}
	if kind != results.FieldAdded {
		c.Sent = compactJSON(sent)
	}
	if kind != results.FieldRemoved {
		c.Stored = compactJSON(stored)
	}
	d.out = append(d.out, c)
}

// compare compares a value sent at path with the value stored there
// (present says whether there is one). field is the name of the field the
// value is in, which picks a list's merge key; keyedItem says that the
// value is a list item matched by merge key.
func (d *differ) compare(path, field string, sent, stored any, present, keyedItem bool) {
	if !present {
		if sent != nil { // null asks for no field
			d.add(results.FieldRemoved, path, sent, nil)
		}
		return
	}
	switch s := sent.(type) {
	case map[string]any:
		st, ok := stored.(map[string]any)
		if !ok {
			d.add(results.FieldChanged, path, sent, stored)
			return
		}
		for _, k := range sortedKeys(s) {
			v, ok := st[k]
			d.compare(fieldpath.AppendField(path, k), k, s[k], v, ok, false)
		}
		if d.whole || keyedItem {
			for _, k := range sortedKeys(st) {
				if _, ok := s[k]; !ok {
					d.add(results.FieldAdded, fieldpath.AppendField(path, k), nil, st[k])
				}
			}
		}
	case []any:
		st, ok := stored.([]any)
		if !ok {
			d.add(results.FieldChanged, path, sent, stored)
			return
		}
		if key := mergeKeys[field]; key != "" && allKeyed(s, key) && allKeyed(st, key) {
			d.compareKeyed(path, field, key, s, st)
			return
		}
		for i, v := range s {
			p := fieldpath.AppendIndex(path, i)
			if i < len(st) {
				d.compare(p, field, v, st[i], true, false)
			} else {
				d.add(results.FieldRemoved, p, v, nil)
			}
		}
		if d.whole {
			for i := len(s); i < len(st); i++ {
				d.add(results.FieldAdded, fieldpath.AppendIndex(path, i), nil, st[i])
			}
		}
	default:
		if !reflect.DeepEqual(sent, stored) {
			d.add(results.FieldChanged, path, sent, stored)
		}
	}
}

// compareKeyed compares two lists whose items all have the merge key.
func (d *differ) compareKeyed(path, field, key string, sent, stored []any) {
	seen := map[string]bool{}
	for _, v := range sent {
		k := keyValue(v, key)
		seen[k] = true
		p := fieldpath.AppendItem(path, key, k)
		if st, ok := findKeyed(stored, key, k); ok {
			d.compare(p, field, v, st, true, true)
		} else {
			d.add(results.FieldRemoved, p, v, nil)
		}
	}
	if d.whole {
		for _, v := range stored {
			if k := keyValue(v, key); !seen[k] {
				d.add(results.FieldAdded, fieldpath.AppendItem(path, key, k), nil, v)
			}
		}
	}
}

// jsonPatchOp compares the value of one add or replace operation with what
// is stored at its path.
func (d *differ) jsonPatchOp(op any, stored map[string]any) {
	m, _ := op.(map[string]any)
	kind, _ := m["op"].(string)
	pointer, _ := m["path"].(string)
	value, hasValue := m["value"]
	if kind != "add" && kind != "replace" || !hasValue || !strings.HasPrefix(pointer, "/") {
		return
	}
	tokens := strings.Split(pointer[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	if tokens[0] == "status" || len(tokens) >= 2 && tokens[0] == "metadata" && slices.Contains(serverMetadata, tokens[1]) {
		return
	}
	var node any = stored
	path, field := "", ""
	present, keyedItem := true, false
	for _, t := range tokens {
		if !present {
			path = fieldpath.AppendField(path, t)
			continue
		}
		keyedItem = false
		switch n := node.(type) {
		case map[string]any:
			path, field = fieldpath.AppendField(path, t), t
			node, present = n[t]
		case []any:
			i, err := strconv.Atoi(t)
			if t == "-" {
				i, err = len(n)-1, nil
			}
			if err != nil || i < 0 || i >= len(n) {
				if err == nil && i >= 0 {
					path = fieldpath.AppendIndex(path, i)
				} else {
					path = fieldpath.AppendField(path, t)
				}
				present = false
				continue
			}
			node = n[i]
			if key := mergeKeys[field]; key != "" && allKeyed(n, key) {
				path = fieldpath.AppendItem(path, key, keyValue(node, key))
				keyedItem = true
			} else {
				path = fieldpath.AppendIndex(path, i)
			}
		default:
			path, present = fieldpath.AppendField(path, t), false
		}
	}
	d.compare(path, field, value, node, present, keyedItem)
}

// allKeyed reports whether every item of l is an object with key.
func allKeyed(l []any, key string) bool {
	for _, v := range l {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m[key]; !ok {
			return false
		}
	}
	return true
}

// keyValue renders an item's merge key as a path spells it.
func keyValue(item any, key string) string {
	return fieldpath.KeyValue(item.(map[string]any)[key])
}

func findKeyed(l []any, key, value string) (any, bool) {
	for _, v := range l {
		if keyValue(v, key) == value {
			return v, true
		}
	}
	return nil, false
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

// compactJSON renders a value on one line.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
