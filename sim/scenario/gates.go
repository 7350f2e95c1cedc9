package scenario

import (
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
)

// Gates: what a gate holds, and the steps that release it.

// gateResource is a resource as a gate names it: a plural name, with a
// subresource after a slash.
var gateResource = regexp.MustCompile(`^[a-z][a-z0-9]*(/[a-z]+)?$`)

// controllerManagerPrefix names one of kube-controller-manager's controllers.
const controllerManagerPrefix = "kube-controller-manager/"

// gate returns the gate of a name, nil when there is none.
func (v *validator) gate(name string) *v1alpha1.Gate {
	for i := range v.sc.Spec.Gates {
		if v.sc.Spec.Gates[i].Name == name {
			return &v.sc.Spec.Gates[i]
		}
	}
	return nil
}

func (v *validator) declaredGates() string {
	if len(v.sc.Spec.Gates) == 0 {
		return "spec.gates declares none"
	}
	var names []string
	for _, g := range v.sc.Spec.Gates {
		names = append(names, g.Name)
	}
	return "declared gates: " + strings.Join(names, ", ")
}

// gates checks spec.gates, and that every gate is opened, by until or by a
// release step, after every step that expects it holding.
func (v *validator) gates() {
	names := map[string]bool{}
	holds := map[string]string{} // the gate names of the webhooks' holds
	for _, w := range v.sc.Spec.Webhooks {
		if w.Hold != nil {
			holds[w.Name+"-hold"] = w.Name
		}
	}
	for i, g := range v.sc.Spec.Gates {
		gp := index("spec.gates", i)
		if msgs := validation.IsDNS1123Label(g.Name); g.Name == "" || len(msgs) > 0 {
			v.errorf(join(gp, "name"), "invalid name %s: a DNS label (lowercase letters, digits and '-')", quote(g.Name))
		}
		if names[g.Name] {
			v.errorf(join(gp, "name"), "duplicate gate name %s", quote(g.Name))
		}
		if w, ok := holds[g.Name]; ok {
			v.errorf(join(gp, "name"), "gate name %s is the name of webhook %s's hold, which is served as a gate: choose another", quote(g.Name), quote(w))
		}
		names[g.Name] = true
		v.gateWho(gp, g)
		if !gateResource.MatchString(g.Resource) {
			v.errorf(join(gp, "resource"), "invalid resource %s: a plural resource name, a subresource after a slash (trainjobs, pods/binding)", quote(g.Resource))
		}
		if c := g.Change; c != nil {
			cp := join(gp, "change")
			switch {
			case (c.Field == "") == (c.Entry == ""):
				v.errorf(cp, "a change names a field (with from and to) or an entry's manager, one of the two")
			case c.Entry != "" && (c.From != nil || c.To != nil):
				v.errorf(cp, "from and to belong to a field change, not to an entry's")
			case c.Field != "" && !validField(c.Field):
				_, err := fieldpath.Parse(c.Field)
				v.errorf(join(cp, "field"), "%v: a path from the object's root, list items by key or position (spec.suspend, status.jobsStatus[name=node].active)", err)
			case c.Field != "" && c.From == nil && c.To == nil:
				v.errorf(cp, "a field change needs from, to, or both")
			}
		}
		if g.Until != "" {
			v.untilStep(join(gp, "until"), g.Until)
		}
	}
	v.gateOrder()
}

// validField reports whether a gate's change field is a path.
func validField(field string) bool {
	_, err := fieldpath.Parse(field)
	return err == nil
}

// gateWho checks that a gate holds the requests of one component, user or
// actor, and that the scenario runs the component.
func (v *validator) gateWho(gp string, g v1alpha1.Gate) {
	set := 0
	for _, s := range []string{g.Component, g.User, g.Actor} {
		if s != "" {
			set++
		}
	}
	if set != 1 {
		v.errorf(gp, "a gate holds the requests of one component, user or actor: set one of the three")
		return
	}
	cp := join(gp, "component")
	switch c := g.Component; {
	case c == "":
	case slices.Contains(v1alpha1.ClusterComponents, c), slices.Contains(v.sc.Spec.Components, c):
	case slices.Contains(v1alpha1.Components, c):
		v.errorf(cp, "component %s is not in spec.components: the scenario does not run it; add it there", quote(c))
	case strings.HasPrefix(c, controllerManagerPrefix):
		if msgs := validation.IsDNS1123Label(strings.TrimPrefix(c, controllerManagerPrefix)); len(msgs) > 0 {
			v.errorf(cp, "invalid controller %s: kube-controller-manager/<controller> (kube-controller-manager/job-controller)", quote(c))
		}
	default:
		v.errorf(cp, "unknown component %s: must be one of %s, kube-controller-manager/<controller>, or one of spec.components", quote(c), strings.Join(v1alpha1.ClusterComponents, ", "))
	}
	if g.Actor != "" && !v.actors[g.Actor] {
		v.errorf(join(gp, "actor"), "unknown actor %s (%s)", quote(g.Actor), v.declaredActors())
	}
}

// untilStep checks a step that ends a hold or opens a gate: a step of
// spec.steps that every Trainer release runs.
func (v *validator) untilStep(path, until string) bool {
	ref, ok := v.steps[until]
	switch {
	case !ok:
		v.errorf(path, "no step is named %s", quote(until))
	case ref.path != index("spec.steps", ref.outer):
		v.errorf(path, "step %s is a write of a concurrently group: name a step of spec.steps", quote(until))
	case v.sc.Spec.Steps[ref.outer].Trainer != nil:
		v.errorf(path, "step %s runs on some Trainer releases only (its trainer.versions): on the others the requests would be held to the end; name a step every release runs", quote(until))
	default:
		return true
	}
	return false
}

// release checks a step's release (inGroup: an entry of a concurrently
// group): its gate, and that the gate is still closed then.
func (v *validator) release(path string, r *v1alpha1.Release, outer int, inGroup bool) {
	if (r.Gate == "") == (r.View == "") {
		v.errorf(path, "a release names a gate or a view, one of the two")
		return
	}
	if v.sc.Spec.Steps[outer].Trainer != nil {
		v.errorf(path, "a release on a step some Trainer releases skip would leave the gate or view closed on them: release on a step every release runs")
	}
	if r.View != "" {
		v.releaseOfView(path, r, inGroup)
		return
	}
	g := v.gate(r.Gate)
	if g == nil {
		v.errorf(join(path, "gate"), "unknown gate %s (%s)", quote(r.Gate), v.declaredGates())
		return
	}
	if inGroup && g.Component == "" {
		v.errorf(join(path, "gate"), "gate %s holds a user's or an actor's requests: a release in a concurrently group waits for the API server's answer to what it lets through, which the audit log records for components only; give the gate a component", quote(g.Name))
	}
}

// gateOrder checks, gate by gate, that nothing releases or expects a gate
// after it opened: a whole release (not one) or its until step opens it.
func (v *validator) gateOrder() {
	for _, g := range v.sc.Spec.Gates {
		opened := ""
		for i, st := range v.sc.Spec.Steps {
			sp := index("spec.steps", i)
			// A step releases before its expect; a group's release entries
			// during the group; until opens the gate after the step.
			for path, r := range stepReleases(sp, st) {
				switch {
				case r.Gate != g.Name:
				case opened != "":
					v.errorf(join(path, "gate"), "gate %s is open since %s: this release holds nothing", quote(g.Name), opened)
				case !r.One:
					opened = fmt.Sprintf("the release at %s", path)
				}
			}
			if st.Expect != nil && opened != "" {
				for j, h := range st.Expect.Held {
					if h.Gate == g.Name {
						v.errorf(join(index(join(join(sp, "expect"), "held"), j), "gate"), "gate %s is open since %s: it holds nothing by then", quote(g.Name), opened)
					}
				}
			}
			if g.Until == st.Name && opened == "" {
				opened = fmt.Sprintf("step %s (%s), its until", quote(st.Name), sp)
			}
		}
	}
}

// stepReleases yields the releases of a step of spec.steps at path sp, by
// their paths: its own, then its concurrently group's entries.
func stepReleases(sp string, st v1alpha1.Step) iter.Seq2[string, *v1alpha1.Release] {
	return func(yield func(string, *v1alpha1.Release) bool) {
		if st.Release != nil && !yield(join(sp, "release"), st.Release) {
			return
		}
		if st.Concurrently == nil {
			return
		}
		for j, w := range st.Concurrently.Writes {
			if w.Release != nil && !yield(join(index(join(join(sp, "concurrently"), "writes"), j), "release"), w.Release) {
				return
			}
		}
	}
}
