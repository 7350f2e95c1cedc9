package kubeconfig

// Kueue on a cluster simctl did not start: one that runs it is reused as it
// runs (its version from its controller's image, a namespace's own copy of
// its TrainJob defaulting webhook as it is installed); one that does not is
// not installed into, and the scenarios that ask for Kueue are skipped.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/kueue"
	"github.com/trainersim/trainersim/sim/probe"
)

// KueueDeployment is Kueue's controller Deployment as its config/default
// (and its Helm chart) names it: where Start looks for a Kueue that runs.
var KueueDeployment = client.ObjectKey{Namespace: "kueue-system", Name: "kueue-controller-manager"}

var _ cluster.KueueWebhooks = (*Kubeconfig)(nil)

// runningKueue returns the version of the Kueue the cluster runs: the tag of
// the image of its controller Deployment (KueueDeployment), "unknown" when
// the image has none; empty when there is no such Deployment or it is not
// Available.
func runningKueue(ctx context.Context, c client.Client) (string, error) {
	d := &appsv1.Deployment{}
	err := c.Get(ctx, KueueDeployment, d)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("failed to look for Kueue's Deployment %s: %w", KueueDeployment, err)
	case !probe.DeploymentAvailable(d):
		return "", nil
	}
	for _, ctr := range d.Spec.Template.Spec.Containers {
		if tag, ok := kueueImageTag(ctr.Image); ok {
			return tag, nil
		}
	}
	return "unknown", nil
}

// kueueImageTag returns the tag of a Kueue image (a repository named kueue,
// registry.k8s.io/kueue/kueue:v0.19.1); false for another image or one
// without a tag.
func kueueImageTag(image string) (string, bool) {
	image, _, _ = strings.Cut(image, "@") // a digest after the tag
	repo, tag, ok := strings.Cut(image[strings.LastIndexByte(image, '/')+1:], ":")
	return tag, repo == "kueue" && ok
}

// KueueTrainJobWebhook is cluster.KueueWebhooks: a copy of the TrainJob
// defaulting webhook of the Kueue the cluster runs, as it is installed
// (its service and CA bundle), for the namespace alone.
func (k *Kubeconfig) KueueTrainJobWebhook(ctx context.Context, namespace, suffix, policy string) (*admissionv1.MutatingWebhookConfiguration, error) {
	if k.versions.Kueue == "" {
		return nil, errors.New("the cluster runs no Kueue")
	}
	var list admissionv1.MutatingWebhookConfigurationList
	if err := k.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("failed to list MutatingWebhookConfigurations: %w", err)
	}
	for _, cfg := range list.Items {
		if cfg.Labels[cluster.ManagedByLabel] == cluster.ManagedByValue {
			continue // a copy of a scenario's
		}
		for i := range cfg.Webhooks {
			if cfg.Webhooks[i].Name == kueue.TrainJobWebhook {
				return kueue.OwnTrainJobWebhook(&cfg.Webhooks[i], namespace, suffix, policy), nil
			}
		}
	}
	return nil, fmt.Errorf("Kueue runs, but no MutatingWebhookConfiguration holds its TrainJob webhook %s", kueue.TrainJobWebhook)
}

// kueueKinds are the cluster-scoped Kueue objects of a scenario's
// spec.queues, which carry cluster.RunLabel on a cluster simctl did not
// start.
var kueueKinds = []string{"ClusterQueue", "ResourceFlavor", "WorkloadPriorityClass"}

// cleanKueue deletes, with del, the Kueue objects and the copies of Kueue's
// webhook that sel selects (a killed run's); none on a cluster without
// Kueue's API.
func cleanKueue(ctx context.Context, c client.Client, sel client.ListOption, del func(kind string, o client.Object)) error {
	var errs []error
	for _, kind := range kueueKinds {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("kueue.x-k8s.io/v1beta2")
		list.SetKind(kind + "List")
		if err := c.List(ctx, list, sel); err != nil {
			if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				errs = append(errs, fmt.Errorf("failed to list %ss: %w", kind, err))
			}
			continue
		}
		for i := range list.Items {
			if list.Items[i].GetDeletionTimestamp() == nil {
				del(kind, &list.Items[i])
			}
		}
	}
	var hooks admissionv1.MutatingWebhookConfigurationList
	if err := c.List(ctx, &hooks, sel); err != nil {
		return errors.Join(append(errs, fmt.Errorf("failed to list MutatingWebhookConfigurations: %w", err))...)
	}
	for i := range hooks.Items {
		if strings.HasPrefix(hooks.Items[i].Name, kueue.TrainJobWebhookConfiguration+"-") {
			del("MutatingWebhookConfiguration", &hooks.Items[i])
		}
	}
	return errors.Join(errs...)
}
