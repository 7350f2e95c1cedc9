package scenario

import (
	"slices"
	"strings"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/releases"
)

// Component steps: a component crashed, stopped or started, in an order
// that can happen.

// needsEnvtest checks that a scenario that acts on the managers in simctl's
// process (views, component steps) runs on envtest only, the one cluster
// that runs them there.
func (v *validator) needsEnvtest(path, what string) {
	if c := v.sc.Spec.Clusters; c == nil || !slices.Equal(c.Only, []string{"envtest"}) {
		v.errorf(path, "%s: declare spec.clusters.only: [envtest] with the reason", what)
	}
}

// component checks a component step against the steps before it: a
// component that is down cannot crash or stop, one that runs cannot start.
func (v *validator) component(path string, c *v1alpha1.ComponentAction) {
	if v.down == nil { // once, at the first component step
		v.needsEnvtest(path, "a component step acts on what simctl runs itself (the Trainer's and JobSet's managers in its process; Kueue's, kube-controller-manager's, kube-scheduler's and KWOK's processes), which only envtest does")
	}
	if c.Name == "kueue" && !slices.Contains(v.sc.Spec.Components, c.Name) {
		v.errorf(join(path, "name"), "component kueue is not in spec.components: the scenario does not run it; add it there")
	}
	if v.down == nil {
		v.down = map[string]string{}
	}
	if c.Action == v1alpha1.ComponentUpgrade || c.To != "" {
		v.upgrade(path, c)
		return
	}
	since, down := v.down[c.Name]
	switch c.Action {
	case v1alpha1.ComponentCrash, v1alpha1.ComponentStop:
		if down {
			v.errorf(path, "%s is down since %s: it cannot %s again before a start", c.Name, since, c.Action)
			break
		}
		if c.DownFor != nil {
			if c.DownFor.Duration <= 0 {
				v.errorf(join(path, "downFor"), "must be positive, found %s", c.DownFor.Duration)
			}
			break // it starts again on its own: running, as later steps see it
		}
		v.down[c.Name] = path
	case v1alpha1.ComponentStart, v1alpha1.ComponentRestart:
		if c.DownFor != nil {
			v.errorf(join(path, "downFor"), "downFor is for crash and stop: how long the component stays down")
		}
	}
	switch c.Action {
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

// upgrade checks an upgrade step: of the Trainer, to a release simctl
// runs, without downFor.
func (v *validator) upgrade(path string, c *v1alpha1.ComponentAction) {
	if c.Action != v1alpha1.ComponentUpgrade {
		v.errorf(join(path, "to"), "to is the release of an upgrade: action: upgrade, or leave it out")
		return
	}
	if c.Name != "trainer" {
		v.errorf(join(path, "name"), "an upgrade replaces the Trainer release (and the JobSet release it pins): name: trainer")
	}
	if c.DownFor != nil {
		v.errorf(join(path, "downFor"), "downFor is for crash and stop: how long the component stays down")
	}
	if c.To == "" {
		v.errorf(join(path, "to"), "an upgrade needs the release to run: to: one of %s", strings.Join(releases.TrainerVersions(), ", "))
	} else if _, err := releases.LookupTrainer(c.To); err != nil {
		v.errorf(join(path, "to"), "%v", err)
	} else if v.built != nil {
		if err := v.built(c.To); err != nil && v.unbuiltWarns {
			v.warnf(join(path, "to"), "%v", err)
		} else if err != nil {
			v.errorf(join(path, "to"), "%v", err)
		}
	}
	delete(v.down, c.Name) // the new release's managers run
}
