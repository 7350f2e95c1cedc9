package kind

// Layouts of the kind cluster: where what is installed from which of its
// project's manifests. The default is the Trainer's own install; kueue-e2e
// is the cluster of Kueue's own e2e set-up, which Kueue's TrainJob e2e test
// (and a platform that installs JobSet and Kueue on their own) expects.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/providers/kubeconfig"
	"github.com/trainersim/trainersim/sim/releases"
)

// Layouts of Kind.Layout.
const (
	// LayoutTrainer is the Trainer's own install (the default): its
	// manifests/overlays/manager, JobSet included, in kubeflow-system;
	// Kueue, when a run needs it, from its release manifest with the
	// changes of kueue.go (the scenarios' namespaces only).
	LayoutTrainer = "trainer"
	// LayoutKueueE2E is the cluster of Kueue's own e2e set-up
	// (hack/testing/e2e-common.sh, E2E_CONFIG_FOLDER=extended), installed
	// in its order, each waited for: JobSet from its release manifest in
	// jobset-system, the Trainer's overlays/manager without its third-party
	// JobSet, then Kueue of its test/e2e/config/extended, which manages
	// every namespace but kube-system and kueue-system with all its
	// integrations and webhooks. Nothing is changed but what every
	// Deployment of a kind cluster gets (avoidSimulatedNodes).
	LayoutKueueE2E = "kueue-e2e"
)

// Layouts are the layouts Kind.Layout takes.
var Layouts = []string{LayoutTrainer, LayoutKueueE2E}

// ValidateLayout returns an error naming the layouts for one that is none
// of them; empty is LayoutTrainer.
func ValidateLayout(layout string) error {
	if layout == "" || slices.Contains(Layouts, layout) {
		return nil
	}
	return fmt.Errorf("unknown layout %q: the kind cluster's layouts are %s", layout, strings.Join(Layouts, ", "))
}

// kueueE2EJobSet and kueueE2ETrainer are the Deployments of JobSet and the
// Trainer in the kueue-e2e layout, where Kueue's e2e suites wait for them
// (test/util: WaitForJobSetAvailability,
// WaitForKubeFlowTrainnerControllerManagerAvailability).
var (
	kueueE2EJobSet  = client.ObjectKey{Namespace: "jobset-system", Name: "jobset-controller-manager"}
	kueueE2ETrainer = client.ObjectKey{Namespace: "kubeflow-system", Name: "kubeflow-trainer-controller-manager"}
)

// installKueueE2E installs the kueue-e2e layout as Kueue's
// hack/testing/e2e-common.sh does: JobSet (install_jobset), then the
// Trainer (install_kubeflow_trainer), each until its Deployment is
// Available, then Kueue (cluster_kueue_deploy) until its webhooks serve.
// Kueue goes last: its Pod, Deployment and JobSet webhooks, which fail
// closed, would hold the other controllers' Pods until it serves.
func (in *installer) installKueueE2E(ctx context.Context) error {
	for _, step := range []struct {
		file string
		want client.ObjectKey
	}{{fixtures.KueueE2EJobSet, kueueE2EJobSet}, {fixtures.KueueE2ETrainer, kueueE2ETrainer}} {
		if err := in.applyDeploying(ctx, step.file, step.want); err != nil {
			return err
		}
		if err := in.waitAvailable(ctx, []client.ObjectKey{step.want}); err != nil {
			return err
		}
	}
	since := in.progress.Now()
	if err := in.applyDeploying(ctx, fixtures.KueueE2EKueue, kubeconfig.KueueDeployment); err != nil {
		return err
	}
	if err := in.waitKueue(ctx); err != nil {
		return err
	}
	in.progress.Ready(releases.ComponentKueue, since)
	return nil
}

// applyDeploying applies the manifest file (applyFile), which must hold the
// Deployment want.
func (in *installer) applyDeploying(ctx context.Context, file string, want client.ObjectKey) error {
	deployments, err := in.applyFile(ctx, file)
	if err != nil {
		return err
	}
	if !slices.Contains(deployments, want) {
		return fmt.Errorf("%s has no Deployment %s: the install manifest changed", file, want)
	}
	return nil
}

// layoutComponents are the components a layout runs besides the Trainer
// and JobSet, whatever Kind.Components say.
func layoutComponents(layout string) []string {
	if layout == LayoutKueueE2E {
		return []string{releases.ComponentKueue}
	}
	return nil
}
