// Package fieldpath reads field ownership out of managedFields. It parses
// the paths of ownership expectations (spec.runtimePatches[manager=x].trainingRuntimeSpec)
// into the keys of a FieldsV1 set and says which field managers own them. It
// exists apart from the runner so that the scenario loader can check paths
// without running anything.
package fieldpath

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Path is a parsed field path: one FieldsV1 key per element, such as
// f:spec or k:{"manager":"kueue.x-k8s.io/manager"}.
type Path []string

// Parse reads a path of field names separated by dots, each optionally
// followed by list items selected by key in brackets:
//
//	spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec
//
// A field whose name has dots, such as a label key, is written as a quoted
// string in brackets: nodeSelector["node.kubernetes.io/instance-type"].
// An item selector [k=v] becomes the key k:{"k":"v"}; [a=x,b=y] selects by
// two keys. Values are strings (the value may contain dots but not "]" or
// ","); a key whose server-side value is a number also matches, see Owners.
func Parse(s string) (Path, error) {
	if s == "" {
		return nil, fmt.Errorf("empty path")
	}
	var p Path
	rest := s
	for {
		end := strings.IndexAny(rest, ".[")
		name := rest
		if end >= 0 {
			name = rest[:end]
		}
		if name == "" {
			return nil, fmt.Errorf("invalid path %q: empty field name", s)
		}
		if strings.ContainsAny(name, "]=,") {
			return nil, fmt.Errorf("invalid path %q: unexpected character in field name %q", s, name)
		}
		p = append(p, "f:"+name)
		if end < 0 {
			return p, nil
		}
		rest = rest[end:]
		for strings.HasPrefix(rest, "[") {
			if strings.HasPrefix(rest, `["`) {
				name, after, err := quotedField(rest[1:])
				if err != nil {
					return nil, fmt.Errorf("invalid path %q: %w", s, err)
				}
				p = append(p, "f:"+name)
				rest = after
				continue
			}
			closing := strings.IndexByte(rest, ']')
			if closing < 0 {
				return nil, fmt.Errorf("invalid path %q: missing ]", s)
			}
			key, err := itemKey(rest[1:closing])
			if err != nil {
				return nil, fmt.Errorf("invalid path %q: %w", s, err)
			}
			p = append(p, key)
			rest = rest[closing+1:]
		}
		switch {
		case rest == "":
			return p, nil
		case rest[0] != '.':
			return nil, fmt.Errorf("invalid path %q: expected . or [ after ]", s)
		}
		rest = rest[1:]
	}
}

// quotedField reads a field name written as a quoted string in brackets,
// for names with dots such as a label key: the rest of `"a.b/c"]...`. It
// returns the name and what follows the closing bracket.
func quotedField(s string) (string, string, error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", fmt.Errorf("unterminated quoted field name at %s", s)
	}
	name, err := strconv.Unquote(q)
	if err != nil || name == "" {
		return "", "", fmt.Errorf("invalid quoted field name %s", q)
	}
	if !strings.HasPrefix(s[len(q):], "]") {
		return "", "", fmt.Errorf("expected ] after the quoted field name %s", q)
	}
	return name, s[len(q)+1:], nil
}

// itemKey turns "a=x,b=y" into k:{"a":"x","b":"y"}, fields sorted by name
// and encoded as the API server encodes them (compact JSON).
func itemKey(sel string) (string, error) {
	if sel == "" {
		return "", fmt.Errorf("empty item selector []: want [key=value]")
	}
	fields := map[string]string{}
	for _, kv := range strings.Split(sel, ",") {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			return "", fmt.Errorf("item selector %q: want key=value", kv)
		case v == "":
			return "", fmt.Errorf("item selector %q: empty value", kv)
		}
		if _, dup := fields[k]; dup {
			return "", fmt.Errorf("item selector [%s]: key %q twice", sel, k)
		}
		fields[k] = v
	}
	// encoding/json sorts map keys, as structured-merge-diff sorts key fields.
	b, err := json.Marshal(fields)
	if err != nil {
		return "", err
	}
	return "k:" + string(b), nil
}

// Owners returns the field managers, sorted and without repetition, whose
// FieldsV1 set contains p: the field itself or anything under it. Entries of
// one manager with different operations (Apply and Update) count as one.
func Owners(entries []metav1.ManagedFieldsEntry, p Path) ([]string, error) {
	var out []string
	for _, e := range entries {
		if e.FieldsV1 == nil || slices.Contains(out, e.Manager) {
			continue
		}
		var set map[string]any
		if err := json.Unmarshal(e.FieldsV1.Raw, &set); err != nil {
			return nil, fmt.Errorf("failed to decode managedFields of %s: %w", e.Manager, err)
		}
		if contains(set, p) {
			out = append(out, e.Manager)
		}
	}
	slices.Sort(out)
	return out, nil
}

// contains reports whether the FieldsV1 set has a node at p.
func contains(set map[string]any, p Path) bool {
	node := set
	for _, key := range p {
		child, ok := lookup(node, key)
		if !ok {
			return false
		}
		node = child
	}
	return true
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
