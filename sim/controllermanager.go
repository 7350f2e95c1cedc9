package sim

import (
	"context"
	"strings"
)

// controllerManagerControllers are the kube-controller-manager controllers a
// TrainJob needs on its way to Pods, and to be cleaned up after.
var controllerManagerControllers = []string{
	"job-controller",                   // Jobs -> Pods
	"garbage-collector-controller",     // TrainJob -> JobSet -> Jobs -> Pods cascade
	"namespace-controller",             // deleting a namespace deletes its objects
	"node-lifecycle-controller",        // clears node.kubernetes.io/not-ready once Ready
	"serviceaccount-controller",        // the default ServiceAccount of new namespaces
	"pod-garbage-collector-controller", // Pods bound to deleted nodes
}

func (e *Environment) startControllerManager(ctx context.Context, bin string) error {
	return e.startComponent(ctx, ComponentControllerManager, bin, func(kubeconfig string, port int, certDir string) []string {
		return append(componentArgs(kubeconfig, port, certDir),
			"--controllers="+strings.Join(controllerManagerControllers, ","),
			// Check node conditions every second, so the not-ready taint
			// goes as soon as KWOK reports a node Ready.
			"--node-monitor-period=1s",
		)
	})
}
