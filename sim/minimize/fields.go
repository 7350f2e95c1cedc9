package minimize

import (
	"context"
	"slices"
	"sort"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// objectProtected are the paths of an object's body that stay: without
// them the write has no object to name.
var objectProtected = [][]string{{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "namespace"}}

// body is one body a scenario writes: a step's create, apply, patch or
// update, or a set-up object.
type body struct {
	// get and set read and replace the body in a copy of the scenario.
	get func(sc *v1alpha1.Scenario) any
	set func(sc *v1alpha1.Scenario, v any)
	// protected are the paths that stay.
	protected [][]string
	// whole says the body's items go whole or not at all (a JSON patch's
	// operations).
	whole bool
}

// fields removes the fields of every body, from the top down: the
// children of a map or list that can go, in chunks, then the children of
// those that stay.
func (m *minimizer) fields(ctx context.Context) error {
	m.phase = "fields"
	for _, b := range bodiesOf(m.cur) {
		if err := m.fieldsOf(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

func (m *minimizer) fieldsOf(ctx context.Context, b body) error {
	queue := [][]any{nil}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		kids := children(at(b.get(m.cur), path))
		var units []int
		for i, k := range kids {
			if classify(b.protected, path, k) == removable {
				units = append(units, i)
			}
		}
		base := m.cur.Clone()
		keep, err := m.ddmin(ctx, units, func(keep []int) *v1alpha1.Scenario {
			c := base.Clone()
			tree := b.get(c)
			var left []int
			for i := range kids {
				if !slices.Contains(units, i) || slices.Contains(keep, i) {
					left = append(left, i)
				}
			}
			b.set(c, replaceAt(tree, path, only(at(tree, path), kids, left)))
			return c
		})
		m.res.FieldsRemoved += len(units) - len(keep)
		if err != nil {
			return err
		}
		if b.whole && len(path) == 0 {
			continue
		}
		node := at(b.get(m.cur), path)
		for _, k := range children(node) {
			if v := at(node, []any{k}); hasChildren(v) && classify(b.protected, path, k) != kept {
				queue = append(queue, append(slices.Clone(path), k))
			}
		}
	}
	return nil
}

// bodiesOf lists the bodies sc writes, in order.
func bodiesOf(sc *v1alpha1.Scenario) []body {
	var out []body
	for i, st := range sc.Spec.Steps {
		out = append(out, stepBodies(st, func(sc *v1alpha1.Scenario) *v1alpha1.Step { return &sc.Spec.Steps[i] })...)
		if c := st.Concurrently; c != nil {
			for j, w := range c.Writes {
				out = append(out, stepBodies(w, func(sc *v1alpha1.Scenario) *v1alpha1.Step { return &sc.Spec.Steps[i].Concurrently.Writes[j] })...)
			}
		}
	}
	for i, s := range sc.Spec.Setup {
		if s.Object != nil {
			out = append(out, body{
				get:       func(sc *v1alpha1.Scenario) any { return map[string]any(sc.Spec.Setup[i].Object) },
				set:       func(sc *v1alpha1.Scenario, v any) { sc.Spec.Setup[i].Object = asObject(v) },
				protected: objectProtected,
			})
		}
	}
	return out
}

func stepBodies(st v1alpha1.Step, step func(*v1alpha1.Scenario) *v1alpha1.Step) []body {
	var out []body
	if st.Create != nil {
		out = append(out, body{
			get:       func(sc *v1alpha1.Scenario) any { return map[string]any(step(sc).Create) },
			set:       func(sc *v1alpha1.Scenario, v any) { step(sc).Create = asObject(v) },
			protected: objectProtected,
		})
	}
	if st.Apply != nil {
		out = append(out, body{
			get:       func(sc *v1alpha1.Scenario) any { return map[string]any(step(sc).Apply) },
			set:       func(sc *v1alpha1.Scenario, v any) { step(sc).Apply = asObject(v) },
			protected: objectProtected,
		})
	}
	if p := st.Patch; p != nil && p.Body != nil {
		out = append(out, body{
			get:   func(sc *v1alpha1.Scenario) any { return step(sc).Patch.Body },
			set:   func(sc *v1alpha1.Scenario, v any) { step(sc).Patch.Body = v },
			whole: p.Type == v1alpha1.PatchJSON,
		})
	}
	if u := st.Update; u != nil && u.Object != nil {
		out = append(out, body{
			get:       func(sc *v1alpha1.Scenario) any { return map[string]any(step(sc).Update.Object) },
			set:       func(sc *v1alpha1.Scenario, v any) { step(sc).Update.Object = asObject(v) },
			protected: objectProtected,
		})
	}
	if u := st.Update; u != nil && u.Set != nil {
		out = append(out, body{
			get: func(sc *v1alpha1.Scenario) any { return map[string]any(step(sc).Update.Set) },
			set: func(sc *v1alpha1.Scenario, v any) { step(sc).Update.Set = asObject(v) },
		})
	}
	return out
}

func asObject(v any) v1alpha1.Object {
	m, _ := v.(map[string]any)
	return m
}

// A child of a body's node is removable, kept (a protected path), or above
// a protected path (it stays, its children are looked at).
const (
	removable = iota
	kept
	above
)

func classify(protected [][]string, path []any, k any) int {
	full := append(slices.Clone(path), k)
	out := removable
	for _, p := range protected {
		if len(p) < len(full) {
			continue
		}
		same := true
		for i := range full {
			if s, ok := full[i].(string); !ok || s != p[i] {
				same = false
				break
			}
		}
		switch {
		case same && len(p) == len(full):
			return kept
		case same:
			out = above
		}
	}
	return out
}

// children are a map's keys, sorted, or a list's indices.
func children(node any) []any {
	var out []any
	switch n := node.(type) {
	case map[string]any:
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, k)
		}
	case []any:
		for i := range n {
			out = append(out, i)
		}
	}
	return out
}

func hasChildren(v any) bool {
	return len(children(v)) > 0
}

// at returns the node at path ("" keys of maps, int indices of lists), nil
// when there is none.
func at(node any, path []any) any {
	for _, k := range path {
		switch n := node.(type) {
		case map[string]any:
			node = n[k.(string)]
		case []any:
			node = n[k.(int)]
		default:
			return nil
		}
	}
	return node
}

// only returns node with only its children kids[left].
func only(node any, kids []any, left []int) any {
	switch n := node.(type) {
	case map[string]any:
		out := map[string]any{}
		for _, i := range left {
			out[kids[i].(string)] = n[kids[i].(string)]
		}
		return out
	case []any:
		out := []any{}
		for _, i := range left {
			out = append(out, n[kids[i].(int)])
		}
		return out
	}
	return node
}

// replaceAt returns tree with the node at path replaced by v.
func replaceAt(tree any, path []any, v any) any {
	if len(path) == 0 {
		return v
	}
	parent := at(tree, path[:len(path)-1])
	switch p := parent.(type) {
	case map[string]any:
		p[path[len(path)-1].(string)] = v
	case []any:
		p[path[len(path)-1].(int)] = v
	}
	return tree
}
