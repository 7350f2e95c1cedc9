package scenario

import (
	"slices"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// Component steps: a component crashed, stopped or started, in an order
// that can happen.

// needsEnvtest checks that a scenario that acts on the managers in simctl's
// process (views, component steps) runs on envtest only, the one cluster
// that runs them there.
func (v *validator) needsEnvtest(path, what string) {
	if c := v.sc.Spec.Clusters; c == nil || !slices.Equal(c.Only, []string{"envtest"}) {
		v.errorf(path, "%s, which run in simctl's process on envtest only: declare spec.clusters.only: [envtest] with the reason", what)
	}
}

// component checks a component step against the steps before it: a
// component that is down cannot crash or stop, one that runs cannot start.
func (v *validator) component(path string, c *v1alpha1.ComponentAction) {
	if v.down == nil { // once, at the first component step
		v.needsEnvtest(path, "a component step crashes, stops or starts the Trainer's or JobSet's manager")
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
