package scenario

import (
	"maps"
	"slices"
	"strings"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// placeholders reports, one by one, every placeholder value left in the
// document (v1alpha1.Placeholder: what simctl import could not find in an
// audit log), at its field, and drops what else was found wrong there (a
// runtime's spec that is a string, a profile no profile has): the
// scenario runs once each is filled in.
func (d *decoder) placeholders(tree any) {
	type placeholder struct{ path, what string }
	var found []placeholder
	var find func(v any, path string)
	find = func(v any, path string) {
		if what, ok := v1alpha1.PlaceholderText(v); ok {
			found = append(found, placeholder{path, what})
			return
		}
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				find(v[k], freeKey(path, k))
			}
		case []any:
			for i, item := range v {
				find(item, index(path, i))
			}
		}
	}
	find(tree, "")
	d.errs = slices.DeleteFunc(d.errs, func(e *Error) bool {
		return slices.ContainsFunc(found, func(p placeholder) bool {
			return e.Field == p.path || strings.HasPrefix(e.Field, p.path+".") || strings.HasPrefix(e.Field, p.path+"[")
		})
	})
	for _, p := range found {
		d.errorf(d.node(p.path), p.path, "a placeholder simctl import left: %s; fill it in, or import again with --from-cluster KUBECONFIG to read it from the cluster", p.what)
		d.errs[len(d.errs)-1].Placeholder = true
	}
}
