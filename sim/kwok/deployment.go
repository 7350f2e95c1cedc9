package kwok

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/probe"
)

// DeploymentNamespace and Deployment name where a kind cluster of
// trainersim runs kwok (kind.Kind installs it).
const (
	DeploymentNamespace = "kube-system"
	Deployment          = "trainersim-kwok"
)

// DeploymentRuns reports whether the cluster runs trainersim's kwok
// as a Deployment (a cluster of the kind provider).
func DeploymentRuns(ctx context.Context, c client.Client) bool {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: DeploymentNamespace, Name: Deployment}, d); err != nil {
		return false
	}
	return d.Labels[cluster.ManagedByLabel] == cluster.ManagedByValue && probe.DeploymentAvailable(d)
}
