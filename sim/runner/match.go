package runner

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
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
// every wanted item matching some actual item, except at the dot-separated
// paths in exact, where lists must match item for item. It returns a go-cmp
// diff "(-want +got)" of want against the part of got that want names; the
// diff is empty when they match.
func partialMatch(want, got any, exact []string) (bool, string) {
	w, g := normalize(want), normalize(got)
	exactPaths := map[string]bool{}
	for _, p := range exact {
		exactPaths[strings.Trim(p, ".")] = true
	}
	if matches(w, g, "", exactPaths) {
		return true, ""
	}
	return false, cmp.Diff(w, project(w, g, "", exactPaths))
}

func matches(want, got any, path string, exact map[string]bool) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !matches(wv, gv, join(path, k), exact) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return false
		}
		if exact[path] {
			if len(w) != len(g) {
				return false
			}
			for i := range w {
				if !matches(w[i], g[i], path, exact) {
					return false
				}
			}
			return true
		}
		for _, wi := range w {
			if indexOfMatch(wi, g, path, exact) < 0 {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, got)
	}
}

func indexOfMatch(want any, got []any, path string, exact map[string]bool) int {
	for i, gi := range got {
		if matches(want, gi, path, exact) {
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
// replaced toleration shows as + lines.
func project(want, got any, path string, exact map[string]bool) any {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := map[string]any{}
		for k, wv := range w {
			if gv, ok := g[k]; ok {
				out[k] = project(wv, gv, join(path, k), exact)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return got
		}
		if exact[path] {
			out := make([]any, len(g))
			for i := range g {
				if i < len(w) {
					out[i] = project(w[i], g[i], path, exact)
				} else {
					out[i] = g[i]
				}
			}
			return out
		}
		used := make([]bool, len(g))
		out := []any{}
		listMatches := matches(want, got, path, exact)
		for i, wi := range w {
			j := indexOfMatch(wi, g, path, exact)
			if j < 0 && i < len(g) && !used[i] {
				j = i
			}
			if j >= 0 && !used[j] {
				used[j] = true
				out = append(out, project(wi, g[j], path, exact))
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

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describe renders a value for a one-line failure message.
func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
