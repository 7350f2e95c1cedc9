package kind

// Kueue on the kind cluster, when the run needs it (Kind.Components): its
// own release manifest (fixtures.KueueInstall, Kueue's config/default) and
// image, with the changes below and no other, and the same behaviour as the
// Kueue of an envtest cluster (sim/internal/kueue): its configuration's
// managed namespaces, integrations and feature gates, and which of its
// webhooks see which namespaces. How it is served stays upstream's: a
// Deployment with its own certificates (internal certificate management),
// leader election, metrics.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/kueue"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/providers/kubeconfig"
	"github.com/trainersim/trainersim/sim/releases"
)

// kueueImage is the image of Kueue's release manifest, which `make
// kind-images` builds.
const kueueImage = "registry.k8s.io/kueue/kueue:" + releases.KueueVersion

// kueueConfigMap is the ConfigMap Kueue's manager reads its configuration
// from, and kueueConfigKey its key, as its config/default names them.
const (
	kueueConfigMap = "kueue-manager-config"
	kueueConfigKey = "controller_manager_config.yaml"
)

var _ cluster.KueueWebhooks = (*Kind)(nil)

// runsKueue reports whether the run needs Kueue, or its layout runs it.
func (k *Kind) runsKueue() bool {
	return slices.Contains(k.Components, releases.ComponentKueue) || slices.Contains(layoutComponents(k.Layout), releases.ComponentKueue)
}

// componentImages are the images of Components, loaded only when a run
// needs them.
func (k *Kind) componentImages() []string {
	if k.runsKueue() {
		return []string{kueueImage}
	}
	return nil
}

// KueueTrainJobWebhook is cluster.KueueWebhooks: a copy of the TrainJob
// defaulting webhook of the Kueue Start installed, as it is installed.
func (k *Kind) KueueTrainJobWebhook(ctx context.Context, namespace, suffix, policy string) (*admissionv1.MutatingWebhookConfiguration, error) {
	return k.scenarios.KueueTrainJobWebhook(ctx, namespace, suffix, policy)
}

// kueueObjects reads Kueue's release manifest with the changes the kind
// cluster needs, each said where it is made.
func kueueObjects() ([]client.Object, error) {
	objs, err := manifests.ReadObjects(fixtures.FS, fixtures.KueueInstall)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, o := range objs {
		switch o.GetKind() {
		case "APIService":
			// The visibility API (visibility.kueue.x-k8s.io) is left out:
			// its server does not run with VisibilityOnDemand off, as on
			// every cluster (sim/internal/kueue), and an APIService nobody
			// serves makes its group unavailable, which keeps the
			// namespace controller from finishing any namespace's deletion.
			continue
		case "Deployment":
			if err := changeKueueDeployment(o); err != nil {
				return nil, err
			}
		case "ConfigMap":
			if o.GetName() == kueueConfigMap {
				if err := kueueConfiguration(o); err != nil {
					return nil, err
				}
			}
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			narrowed, err := narrowKueueWebhooks(o)
			if err != nil {
				return nil, err
			}
			out = append(out, narrowed)
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

// changeKueueDeployment changes Kueue's Deployment: its manager's image, the one
// `make kind-images` built and Start loaded, is used as it is there
// (imagePullPolicy IfNotPresent: upstream's Always would pull, and no
// registry is reachable), and it is kept off simulated nodes
// (avoidSimulatedNodes, as the Trainer's and JobSet's).
func changeKueueDeployment(u *unstructured.Unstructured) error {
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	found := false
	for _, c := range containers {
		ctr := c.(map[string]any)
		if ctr["image"] == kueueImage {
			ctr["imagePullPolicy"] = string(corev1.PullIfNotPresent)
			found = true
		}
	}
	if !found {
		return fmt.Errorf("deployment %s runs no container of image %s: the install manifest changed", u.GetName(), kueueImage)
	}
	if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return err
	}
	return avoidSimulatedNodes(u)
}

// kueueConfiguration writes, into the ConfigMap of Kueue's configuration,
// upstream's configuration with what Kueue does set as on every cluster
// (kueue.Configuration): upstream's serving settings stay.
func kueueConfiguration(u *unstructured.Unstructured) error {
	upstream, found, err := unstructured.NestedString(u.Object, "data", kueueConfigKey)
	if err != nil || !found {
		return fmt.Errorf("ConfigMap %s has no %s: the install manifest changed", u.GetName(), kueueConfigKey)
	}
	cfg, err := kueue.Configuration([]byte(upstream))
	if err != nil {
		return err
	}
	return unstructured.SetNestedField(u.Object, string(cfg), "data", kueueConfigKey)
}

// narrowKueueWebhooks keeps, of one of Kueue's webhook configurations, the
// webhooks every cluster gets, each for the namespaces it sees there
// (kueue.Narrow).
func narrowKueueWebhooks(u *unstructured.Unstructured) (client.Object, error) {
	var obj client.Object
	switch u.GetKind() {
	case "MutatingWebhookConfiguration":
		m := &admissionv1.MutatingWebhookConfiguration{}
		if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, m); err != nil {
			return nil, fmt.Errorf("failed to read %s: %w", u.GetName(), err)
		}
		kueue.Narrow([]*admissionv1.MutatingWebhookConfiguration{m}, nil)
		obj = m
	default:
		v := &admissionv1.ValidatingWebhookConfiguration{}
		if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err != nil {
			return nil, fmt.Errorf("failed to read %s: %w", u.GetName(), err)
		}
		kueue.Narrow(nil, []*admissionv1.ValidatingWebhookConfiguration{v})
		obj = v
	}
	data, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: data}
	unstructured.RemoveNestedField(out.Object, "metadata", "creationTimestamp")
	out.SetGroupVersionKind(u.GroupVersionKind())
	return out, nil
}

// applyKueue applies Kueue's manifest (kueueObjects): its namespace and
// CRDs first, as kubectl orders them.
func (in *installer) applyKueue(ctx context.Context) error {
	objs, err := kueueObjects()
	if err != nil {
		return err
	}
	return in.applyInOrder(ctx, objs)
}

// waitKueue waits until Kueue's Deployment is Available and its webhooks
// serve with the certificate it made itself: a server-side dry run of a
// ResourceFlavor, which its webhooks default and validate, passes.
func (in *installer) waitKueue(ctx context.Context) error {
	if err := in.waitAvailable(ctx, []client.ObjectKey{kubeconfig.KueueDeployment}); err != nil {
		return err
	}
	flavor := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2",
		"kind":       "ResourceFlavor",
		"metadata":   map[string]any{"name": "trainersim-webhook-probe"},
	}}
	var last error
	err := wait.PollUntilContextTimeout(ctx, installPoll, deploymentsTimeout, true, func(ctx context.Context) (bool, error) {
		last = in.client.Create(ctx, flavor.DeepCopy(), client.DryRunAll)
		if apierrors.IsAlreadyExists(last) {
			last = nil
		}
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("Kueue's webhooks did not serve within %s: %w", deploymentsTimeout, errors.Join(last, err))
	}
	return nil
}
