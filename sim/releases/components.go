package releases

import (
	"fmt"
	"slices"
	"strings"
)

// ComponentKueue is the component of the real Kueue manager.
const ComponentKueue = "kueue"

// Components are the components a cluster can run besides the Trainer and
// JobSet, as --with and a scenario's spec.components name them.
var Components = []string{ComponentKueue}

// ClusterComponents are the components every cluster simctl starts runs,
// whose requests a gate may hold besides those of Components (sim/identity
// gives each its user; a unit test keeps the two in step).
// kube-controller-manager's controllers are named
// kube-controller-manager/<controller> (kube-controller-manager/job-controller).
var ClusterComponents = []string{"trainer", "jobset", "kube-controller-manager", "kube-scheduler", "kwok", "local-path-provisioner"}

// ValidateComponents checks component names.
func ValidateComponents(names []string) error {
	for _, n := range names {
		if !slices.Contains(Components, n) {
			return fmt.Errorf("unknown component %q: trainersim runs %s", n, strings.Join(Components, ", "))
		}
	}
	return nil
}
