package scenario

import (
	"slices"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// Component steps: a component crashed, stopped or started, in an order
// that can happen.

// component checks a component step against the steps before it: a
// component that is down cannot crash or stop, one that runs cannot start.
func (v *validator) component(path string, c *v1alpha1.ComponentAction) {
	if cl := v.sc.Spec.Clusters; (cl == nil || !slices.Equal(cl.Only, []string{"envtest"})) && v.down == nil {
		v.errorf(path, "a component step crashes, stops or starts a manager that runs in simctl's process, which only envtest runs there: declare spec.clusters.only: [envtest] with the reason")
	}
	if v.down == nil {
		v.down = map[string]string{}
	}
	since, down := v.down[c.Name]
	switch c.Action {
	case v1alpha1.ComponentCrash, v1alpha1.ComponentStop:
		if down {
			v.errorf(path, "%s is down since %s: it cannot %s again before a start", c.Name, since, c.Action)
			break
		}
		v.down[c.Name] = path
	case v1alpha1.ComponentStart:
		if !down {
			v.errorf(path, "%s runs: start follows a crash or a stop of it (restart stops it first)", c.Name)
		}
		delete(v.down, c.Name)
	case v1alpha1.ComponentRestart:
		if down {
			v.errorf(path, "%s is down since %s: start it, a restart stops it first", c.Name, since)
		}
	}
}
