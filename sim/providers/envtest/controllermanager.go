package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// controllerManagerControllers are the kube-controller-manager controllers
// that a kind cluster runs and that act on a TrainJob's objects on their way
// to Pods and back: the Job and its Pods, the namespace and ServiceAccount,
// quota, storage, disruption budgets and nodes. docs/fidelity.md's table
// names the ones left out and why (they manage objects no scenario creates:
// Deployments, StatefulSets, DaemonSets, CronJobs, Services' endpoints,
// certificates).
var controllerManagerControllers = []string{
	"job-controller",                           // Jobs -> Pods, Job success and failure
	"ttl-after-finished-controller",            // deletes finished Jobs with ttlSecondsAfterFinished
	"garbage-collector-controller",             // TrainJob -> JobSet -> Jobs -> Pods cascade
	"namespace-controller",                     // deleting a namespace deletes its objects
	"serviceaccount-controller",                // the default ServiceAccount of new namespaces
	"serviceaccount-token-controller",          // tokens of ServiceAccount token Secrets
	"root-ca-certificate-publisher-controller", // kube-root-ca.crt, which every Pod's token volume projects
	"resourcequota-controller",                 // a ResourceQuota's usage, which its admission plugin enforces
	"persistentvolume-binder-controller",       // binds claims to volumes, asks the provisioner for new ones
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	"ephemeral-volume-controller",      // the claims of a Pod's generic ephemeral volumes
	"disruption-controller",            // a PodDisruptionBudget's status, which eviction honours
	"node-lifecycle-controller",        // node conditions to taints; clears not-ready once Ready
	"taint-eviction-controller",        // evicts Pods from NoExecute-tainted nodes after tolerationSeconds
	"pod-garbage-collector-controller", // Pods bound to deleted nodes
}

func (e *Environment) startControllerManager(ctx context.Context, bin string) error {
	// The root CA every namespace's kube-root-ca.crt carries: the API
	// server's serving CA, as kubeadm's ca.crt.
	rootCA := filepath.Join(e.WorkDir, "ca.crt")
	if err := os.WriteFile(rootCA, e.cfg.CAData, 0o644); err != nil {
		return fmt.Errorf("failed to write the root CA: %w", err)
	}
	return e.startComponent(ctx, StepControllerManager, bin, func(kubeconfig string, port int, certDir string) []string {
		return append(componentArgs(kubeconfig, port, certDir),
			"--controllers="+strings.Join(controllerManagerControllers, ","),
			// Each controller acts as a ServiceAccount of its own in
			// kube-system, with the bootstrap policy's role, as kubeadm
			// runs it.
			"--use-service-account-credentials=true",
			// The key envtest's API server verifies ServiceAccount
			// tokens with (--service-account-key-file is its public
			// half), as kubeadm passes both sides.
			"--service-account-private-key-file="+filepath.Join(e.WorkDir, "kube-apiserver-certs", "sa-signer.key"),
			"--root-ca-file="+rootCA,
			// Check node conditions every second, so the not-ready taint
			// goes as soon as KWOK reports a node Ready.
			"--node-monitor-period=1s",
		)
	})
}
