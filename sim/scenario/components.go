package scenario

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trainersim/trainersim/fakegpu"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// Components and Kueue's queues.

// components checks spec.components and spec.queues.
func (v *validator) components() {
	spec := v.sc.Spec
	q := spec.Queues
	if q == nil {
		return
	}
	if !slices.Contains(spec.Components, "kueue") {
		v.errorf("spec.queues", "queues are Kueue's: add kueue to spec.components")
	}
	if q.LocalQueue == "" {
		v.errorf("spec.queues.localQueue", "must name the LocalQueue")
	}

	if len(q.Flavors) == 0 {
		v.errorf("spec.queues.flavors", "a ClusterQueue needs at least one flavor")
	}
	for i, pc := range q.PriorityClasses {
		if msgs := validation.IsDNS1123Subdomain(pc.Name); len(msgs) > 0 {
			v.errorf(join(index("spec.queues.priorityClasses", i), "name"), "invalid name %s: a DNS subdomain (lowercase letters, digits, '-' and '.')", quote(pc.Name))
		}
	}
	seen := map[string]v1alpha1.QueueFlavor{} // by flavor name, across the queues
	v.flavors("spec.queues.flavors", q.Flavors, seen)
	queues := map[string]bool{q.LocalQueue: true}
	for i, t := range q.Teams {
		tp := index("spec.queues.teams", i)
		if msgs := validation.IsDNS1123Subdomain(t.LocalQueue); t.LocalQueue == "" || len(msgs) > 0 {
			v.errorf(join(tp, "localQueue"), "invalid name %s: a DNS subdomain (lowercase letters, digits, '-' and '.')", quote(t.LocalQueue))
		} else if queues[t.LocalQueue] {
			v.errorf(join(tp, "localQueue"), "duplicate LocalQueue %s", quote(t.LocalQueue))
		}
		queues[t.LocalQueue] = true
		if len(t.Flavors) == 0 {
			v.errorf(join(tp, "flavors"), "a ClusterQueue needs at least one flavor")
		}
		v.flavors(join(tp, "flavors"), t.Flavors, seen)
	}
}

// flavors checks the flavors of one ClusterQueue (at path); seen holds the
// first flavor of every name so far, in every queue: one name is one
// ResourceFlavor, so a name given again must name its profile and node
// label again.
func (v *validator) flavors(path string, flavors []v1alpha1.QueueFlavor, seen map[string]v1alpha1.QueueFlavor) {
	names := map[string]bool{}
	for i, f := range flavors {
		fp := index(path, i)
		name := f.Name
		if name == "" {
			name = f.Profile
		}
		if names[name] {
			v.errorf(fp, "duplicate flavor %s: give the flavors of one profile names", quote(name))
		}
		names[name] = true
		if first, ok := seen[name]; !ok {
			seen[name] = f
		} else if first.Profile != f.Profile || first.NodeLabel != f.NodeLabel {
			v.errorf(fp, "flavor %s is of profile %s, node label %s in another queue: one name is one ResourceFlavor, give this one another name", quote(name), first.Profile, quote(first.NodeLabel))
		}
		profile, err := fakegpu.LookupProfile(f.Profile)
		if err != nil {
			v.errorf(join(fp, "profile"), "%v", err)
			continue
		}
		if f.NodeLabel != "" {
			if _, ok := profile.Labels[f.NodeLabel]; !ok && f.NodeLabel != fakegpu.ProfileLabel {
				v.errorf(join(fp, "nodeLabel"), "profile %s has no label %s", f.Profile, quote(f.NodeLabel))
			}
		}
		if !slices.ContainsFunc(v.sc.Spec.Nodes, func(g v1alpha1.NodeGroup) bool { return g.Profile == f.Profile }) {
			v.errorf(join(fp, "profile"), "the scenario has no nodes of profile %s (spec.nodes)", f.Profile)
		}
		for _, q := range []struct{ field, val string }{{"gpu", f.GPU}, {"cpu", f.CPU}, {"memory", f.Memory}} {
			if _, err := resource.ParseQuantity(q.val); q.val != "" && err != nil {
				v.errorf(join(fp, q.field), "invalid quantity %s: %v", quote(q.val), err)
			}
		}
	}
}

// webhooks checks spec.webhooks.
func (v *validator) webhooks() {
	names := map[string]bool{}
	for i, w := range v.sc.Spec.Webhooks {
		wp := index("spec.webhooks", i)
		if msgs := validation.IsDNS1123Subdomain(w.Name); w.Name == "" || len(msgs) > 0 {
			v.errorf(join(wp, "name"), "invalid name %s: a DNS subdomain (lowercase letters, digits, '-' and '.')", quote(w.Name))
		}
		if names[w.Name] {
			v.errorf(join(wp, "name"), "duplicate webhook name %s", quote(w.Name))
		}
		names[w.Name] = true
		if w.Object != "TrainJob" {
			v.errorf(join(wp, "object"), "unsupported object %s: a webhook intercepts TrainJob", quote(w.Object))
		}
		switch {
		case w.Manager == "" && len(w.Entry) == 0 && w.Hold == nil:
			v.errorf(wp, "a webhook writes an entry (manager and entry), holds requests (hold), or both")
		case w.Manager == "" && len(w.Entry) > 0:
			v.errorf(join(wp, "manager"), "must name the manager of the entry it writes")
		case w.Manager != "" && len(w.Entry) == 0:
			v.errorf(join(wp, "entry"), "must give the entry's trainingRuntimeSpec")
		}
		if w.Hold != nil {
			v.hold(join(wp, "hold"), w)
		}
		if p := w.ReinvocationPolicy; p != "" && p != "Never" && p != "IfNeeded" {
			v.errorf(join(wp, "reinvocationPolicy"), "unknown policy %s: must be Never or IfNeeded", quote(p))
		}
		if p := w.FailurePolicy; p != "" && p != "Fail" && p != "Ignore" {
			v.errorf(join(wp, "failurePolicy"), "unknown policy %s: must be Fail or Ignore", quote(p))
		}
	}
}

// hold checks a webhook's hold: what it holds, and a step that releases
// it after every step that expects it holding.
func (v *validator) hold(path string, w v1alpha1.AdmissionWebhook) {
	h := w.Hold
	if h.Requests != v1alpha1.HoldUnsuspend {
		v.errorf(join(path, "requests"), "unknown requests %s: must be %s", quote(h.Requests), quote(v1alpha1.HoldUnsuspend))
	}
	if h.Requests == v1alpha1.HoldUnsuspend && !slices.Contains(w.Operations, "UPDATE") {
		v.errorf(path, "an unsuspend is an UPDATE: add UPDATE to operations")
	}
	up := join(path, "until")
	if h.Until == "" {
		v.errorf(up, "must name the step after which the requests held are answered")
		return
	}
	if !v.untilStep(up, h.Until) {
		return
	}
	ref := v.steps[h.Until]
	for i, st := range v.sc.Spec.Steps {
		if st.Expect != nil && st.Expect.Holding == w.Name && i >= ref.outer {
			v.errorf(join(join(index("spec.steps", i), "expect"), "holding"), "the hold of webhook %s ends with step %s (%s): expect it holding before", quote(w.Name), quote(h.Until), ref.path)
		}
	}
}
