package runner

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/sim/fieldpath"
)

// normalize turns any JSON-shaped value (from YAML, or an unstructured
// object from the server) into the types encoding/json produces, so that
// 8 and 8.0 and int64(8) compare equal.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// partialMatch reports whether got matches want: maps as subsets, lists with
// every wanted item matching some actual item, except at the exact paths,
// where a list must match item for item, in order, and a map must have no
// keys other than the wanted ones (what is inside them is matched as usual,
// unless named too). The paths name places in got, as reports and explain
// print them. It returns a go-cmp diff "(-want +got)" of want against the
// part of got that want names; the diff is empty when they match.
func partialMatch(want, got any, exact []fieldpath.Path) (bool, string) {
	w, g := normalize(want), normalize(got)
	x := exactAt(exact)
	if matches(w, g, x) {
		return true, ""
	}
	return false, cmp.Diff(w, project(w, g, x))
}

// parseExact parses an expectation's exact paths.
func parseExact(exact []string) ([]fieldpath.Path, error) {
	out := make([]fieldpath.Path, 0, len(exact))
	for _, s := range exact {
		p, err := fieldpath.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("exact: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// exactAt holds, at one place of got, what is left of each exact path that
// leads through it; an empty rest names the place itself.
type exactAt []fieldpath.Path

// here reports whether an exact path names this place.
func (x exactAt) here() bool {
	for _, r := range x {
		if len(r) == 0 {
			return true
		}
	}
	return false
}

// field is what is left below field or map key k.
func (x exactAt) field(k string) exactAt {
	var out exactAt
	for _, r := range x {
		if len(r) > 0 && r[0].Kind == fieldpath.FieldKind && r[0].Name == k {
			out = append(out, r[1:])
		}
	}
	return out
}

// item is what is left below item, at position i of its list.
func (x exactAt) item(item any, i int) exactAt {
	var out exactAt
	for _, r := range x {
		if len(r) > 0 && r[0].Selects(item, i) {
			out = append(out, r[1:])
		}
	}
	return out
}

func matches(want, got any, x exactAt) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		if x.here() {
			for k := range g {
				if _, ok := w[k]; !ok {
					return false
				}
			}
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok && emptyList(wv) && x.field(k).here() {
				continue // an exact empty list: none, the field absent included
			}
			if !ok || !matches(wv, gv, x.field(k)) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return false
		}
		if x.here() {
			if len(w) != len(g) {
				return false
			}
			for i := range w {
				if !matches(w[i], g[i], x.item(g[i], i)) {
					return false
				}
			}
			return true
		}
		for _, wi := range w {
			if indexOfMatch(wi, g, x) < 0 {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, got)
	}
}

// emptyList reports whether v is a list with no items.
func emptyList(v any) bool {
	l, ok := v.([]any)
	return ok && len(l) == 0
}

func indexOfMatch(want any, got []any, x exactAt) int {
	for i, gi := range got {
		if matches(want, gi, x.item(gi, i)) {
			return i
		}
	}
	return -1
}

// project returns the part of got that want talks about, shaped like want,
// so that a diff of want against it shows only what the scenario asserted.
// For a subset list, each wanted item is paired with the actual item that
// matches it, or else the one at the same index; when the list does not
// match, actual items no wanted item paired with are kept too, so that a
// replaced toleration shows as + lines. A map at an exact path keeps its
// other keys, which then show as + lines.
func project(want, got any, x exactAt) any {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := map[string]any{}
		for k, wv := range w {
			if gv, ok := g[k]; ok {
				out[k] = project(wv, gv, x.field(k))
			}
		}
		if x.here() {
			for k, gv := range g {
				if _, ok := w[k]; !ok {
					out[k] = gv
				}
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return got
		}
		if x.here() {
			out := make([]any, len(g))
			for i := range g {
				if i < len(w) {
					out[i] = project(w[i], g[i], x.item(g[i], i))
				} else {
					out[i] = g[i]
				}
			}
			return out
		}
		used := make([]bool, len(g))
		out := []any{}
		listMatches := matches(want, got, x)
		for i, wi := range w {
			j := indexOfMatch(wi, g, x)
			if j < 0 && i < len(g) && !used[i] {
				j = i
			}
			if j >= 0 && !used[j] {
				used[j] = true
				out = append(out, project(wi, g[j], x.item(g[j], j)))
			}
		}
		if !listMatches {
			for j := range g {
				if !used[j] {
					out = append(out, g[j])
				}
			}
		}
		return out
	default:
		return got
	}
}

// describe renders a value for a one-line failure message.
func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
