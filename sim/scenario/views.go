package scenario

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/view"
)

// Views: what a view keeps back from a component, and the steps that
// release it.

// viewOf returns the view of a name, nil when there is none.
func (v *validator) viewOf(name string) *v1alpha1.View {
	for i := range v.sc.Spec.Views {
		if v.sc.Spec.Views[i].Name == name {
			return &v.sc.Spec.Views[i]
		}
	}
	return nil
}

func (v *validator) declaredViews() string {
	if len(v.sc.Spec.Views) == 0 {
		return "spec.views declares none"
	}
	var names []string
	for _, w := range v.sc.Spec.Views {
		names = append(names, w.Name)
	}
	return "declared views: " + strings.Join(names, ", ")
}

// views checks spec.views, and that every view is released, by until or by
// a release step, after its from and after every step that expects it
// holding.
func (v *validator) views() {
	if len(v.sc.Spec.Views) == 0 {
		return
	}
	v.needsEnvtest("spec.views", "views stand between the API server and each component (the Trainer's and JobSet's managers in simctl's process, the others behind a loopback proxy), which only envtest lets simctl do")
	names := map[string]bool{}
	for i, w := range v.sc.Spec.Views {
		wp := index("spec.views", i)
		if msgs := validation.IsDNS1123Label(w.Name); w.Name == "" || len(msgs) > 0 {
			v.errorf(join(wp, "name"), "invalid name %s: a DNS label (lowercase letters, digits and '-')", quote(w.Name))
		}
		if names[w.Name] {
			v.errorf(join(wp, "name"), "duplicate view name %s", quote(w.Name))
		}
		names[w.Name] = true
		if w.Partition != "" {
			v.partition(wp, w)
		} else {
			v.oneResource(wp, w)
		}
		if w.From != "" {
			v.untilStep(join(wp, "from"), w.From)
		}
		if w.StaleList {
			v.staleList(wp, w)
		}
		if w.Until != "" && v.untilStep(join(wp, "until"), w.Until) && w.From != "" {
			if from, until := v.steps[w.From], v.steps[w.Until]; until.outer < from.outer {
				v.errorf(join(wp, "until"), "step %s comes before the view's from, step %s: the view would never keep anything back", quote(w.Until), quote(w.From))
			}
		}
	}
	v.viewOrder()
}

// oneResource checks a view of one resource: a component and a resource it
// watches, and how it keeps events back.
func (v *validator) oneResource(wp string, w v1alpha1.View) {
	switch {
	case !v.viewedComponent(wp, w):
	case w.Resource == "":
		v.errorf(join(wp, "resource"), "must name the resource of the component's watch (%s watches %s)", w.Component, watchList(w.Component))
	default:
		if _, ok := view.WatchedResource(w.Component, w.Resource); !ok {
			v.errorf(join(wp, "resource"), "%s does not watch %s: a view of it would keep nothing back (it watches %s)", w.Component, quote(w.Resource), watchList(w.Component))
		}
	}
	if w.Delay != nil {
		switch {
		case w.Coalesce:
			v.errorf(join(wp, "delay"), "a view delays or coalesces, not both: a coalescing view keeps events until its release")
		case w.Delay.Duration <= 0:
			v.errorf(join(wp, "delay"), "must be positive, found %s", w.Delay.Duration)
		}
	}
}

// viewedComponent checks a view's component: one a view sees, that the
// scenario runs.
func (v *validator) viewedComponent(path string, w v1alpha1.View) bool {
	switch {
	case !slices.Contains(view.Components(), w.Component):
		v.errorf(join(path, "component"), "unknown component %s: a view sees %s", quote(w.Component), strings.Join(view.Components(), ", "))
		return false
	case w.Component == "kueue" && !slices.Contains(v.sc.Spec.Components, w.Component):
		v.errorf(join(path, "component"), "component kueue is not in spec.components: the scenario does not run it; add it there")
		return false
	}
	return true
}

// partition checks a view that cuts its component off: of a component the
// scenario runs, and nothing a partition does not read.
func (v *validator) partition(path string, w v1alpha1.View) {
	v.viewedComponent(path, w)
	if !slices.Contains([]string{view.PartitionRefuse, view.PartitionUnanswered}, w.Partition) {
		v.errorf(join(path, "partition"), "unknown partition %s: refuse or unanswered", quote(w.Partition))
	}
	for _, f := range []struct {
		field string
		set   bool
	}{{"resource", w.Resource != ""}, {"objectName", w.ObjectName != ""}, {"coalesce", w.Coalesce}, {"delay", w.Delay != nil}, {"staleList", w.StaleList}} {
		if f.set {
			v.errorf(join(path, f.field), "a partition cuts every resource of %s off: %s is for a view of one resource", w.Component, f.field)
		}
	}
}

// staleList checks that a view that serves a stale list has a list to
// serve: the component (re)starts while the view runs.
func (v *validator) staleList(path string, w v1alpha1.View) {
	started := w.From == ""
	for _, st := range v.sc.Spec.Steps {
		if st.Name == w.From {
			started = true
		}
		if c := st.Component; started && c != nil && c.Name == w.Component {
			switch {
			case c.Action == v1alpha1.ComponentStart, c.Action == v1alpha1.ComponentRestart, c.DownFor != nil:
				return
			}
		}
		if st.Name == w.Until || (st.Release != nil && st.Release.View == w.Name) {
			break
		}
	}
	v.errorf(join(path, "staleList"), "%s lists %s when it starts: a component step must start or restart %s while the view runs (after its from, before its release), or the stale list is never served", w.Component, w.Resource, w.Component)
}

// watchList lists what a component watches, by resource name.
func watchList(component string) string {
	var out []string
	for _, gr := range view.Watches(component) {
		_, r, _ := strings.Cut(gr, "/")
		out = append(out, r)
	}
	return strings.Join(out, ", ")
}

// viewOrder checks, view by view, that nothing releases or expects a view
// before its from or after it was released.
func (v *validator) viewOrder() {
	for _, w := range v.sc.Spec.Views {
		started := w.From == ""
		released := ""
		for i, st := range v.sc.Spec.Steps {
			sp := index("spec.steps", i)
			if st.Name == w.From {
				started = true
			}
			if r := st.Release; r != nil && r.View == w.Name {
				rp := join(join(sp, "release"), "view")
				switch {
				case !started:
					v.errorf(rp, "view %s starts at step %s, after this release: it holds nothing yet", quote(w.Name), quote(w.From))
				case released != "":
					v.errorf(rp, "view %s was released at %s: this release holds nothing", quote(w.Name), released)
				default:
					released = fmt.Sprintf("the release at %s", join(sp, "release"))
				}
			}
			if st.Expect != nil {
				for j, h := range st.Expect.Held {
					if h.View != w.Name {
						continue
					}
					hp := join(index(join(join(sp, "expect"), "held"), j), "view")
					switch {
					case !started:
						v.errorf(hp, "view %s starts at step %s, after this step: it holds nothing yet", quote(w.Name), quote(w.From))
					case released != "":
						v.errorf(hp, "view %s was released at %s: it holds nothing by then", quote(w.Name), released)
					}
				}
			}
			if w.Until == st.Name && released == "" && started {
				released = fmt.Sprintf("step %s (%s), its until", quote(st.Name), sp)
			}
		}
	}
}

// releaseOfView checks a step's release of a view.
func (v *validator) releaseOfView(path string, r *v1alpha1.Release, inGroup bool) {
	if v.viewOf(r.View) == nil {
		v.errorf(join(path, "view"), "unknown view %s (%s)", quote(r.View), v.declaredViews())
		return
	}
	if inGroup {
		v.errorf(join(path, "view"), "a view is released in a step of its own: a concurrently group orders writes, and the events a view lets through are no write the API server answers")
	}
	if r.One {
		v.errorf(join(path, "one"), "one lets a gate's oldest request through: a view delivers what it keeps back all at once")
	}
}
