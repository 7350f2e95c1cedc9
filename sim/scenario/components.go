package scenario

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trainersim/trainersim/fakegpu"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// Components and Kueue's queues.

// QueuePreemptions are the values of queues.preemption.
var QueuePreemptions = []string{"Never", "LowerPriority", "LowerOrNewerEqualPriority"}

// components checks spec.components and spec.queues.
func (v *validator) components() {
	spec := v.sc.Spec
	for i, c := range spec.Components {
		if !slices.Contains(v1alpha1.Components, c) {
			v.errorf(index("spec.components", i), "unknown component %s: must be %s", quote(c), oneOf(v1alpha1.Components))
		}
	}
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
	if q.Preemption != "" && !slices.Contains(QueuePreemptions, q.Preemption) {
		v.errorf("spec.queues.preemption", "unknown preemption %s: must be %s", quote(q.Preemption), oneOf(QueuePreemptions))
	}
	if len(q.Flavors) == 0 {
		v.errorf("spec.queues.flavors", "a ClusterQueue needs at least one flavor")
	}
	names := map[string]bool{}
	for i, f := range q.Flavors {
		fp := index("spec.queues.flavors", i)
		name := f.Name
		if name == "" {
			name = f.Profile
		}
		if names[name] {
			v.errorf(fp, "duplicate flavor %s: give the flavors of one profile names", quote(name))
		}
		names[name] = true
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
		if !slices.ContainsFunc(spec.Nodes, func(g v1alpha1.NodeGroup) bool { return g.Profile == f.Profile }) {
			v.errorf(join(fp, "profile"), "the scenario has no nodes of profile %s (spec.nodes)", f.Profile)
		}
		for _, q := range []struct{ field, val string }{{"gpu", f.GPU}, {"cpu", f.CPU}, {"memory", f.Memory}} {
			if _, err := resource.ParseQuantity(q.val); q.val != "" && err != nil {
				v.errorf(join(fp, q.field), "invalid quantity %s: %v", quote(q.val), err)
			}
		}
	}
}
