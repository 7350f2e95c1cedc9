package kubeconfig

import (
	"context"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/kwok"
)

// Clean deletes from a cluster what runs against it (Kubeconfig) created and
// a killed run left behind: the namespaces and nodes of its scenarios, its
// isolation and lifecycle policies and bindings, its Kueue queueing objects
// and copies of Kueue's webhook (each carries cluster.ManagedByLabel and
// cluster.RunLabel), and the kwok lease once it has expired. It waits for nothing
// to be gone. It returns one line per object it deleted. Objects of a run
// still going are deleted too: run it when no simctl uses the cluster.
func Clean(ctx context.Context, c client.Client, clk clock.PassiveClock) ([]string, error) {
	managed, _ := labels.NewRequirement(cluster.ManagedByLabel, selection.Equals, []string{cluster.ManagedByValue})
	ofRun, _ := labels.NewRequirement(cluster.RunLabel, selection.Exists, nil)
	sel := client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*managed, *ofRun)}
	var deleted []string
	var errs []error
	del := func(kind string, o client.Object) {
		err := c.Delete(ctx, o, client.PropagationPolicy("Background"))
		switch {
		case err == nil:
			deleted = append(deleted, fmt.Sprintf("%s %s", kind, o.GetName()))
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("failed to delete %s %s: %w", kind, o.GetName(), err))
		}
	}
	lists := []struct {
		kind string
		list client.ObjectList
	}{
		{"MutatingAdmissionPolicyBinding", &admissionv1.MutatingAdmissionPolicyBindingList{}},
		{"MutatingAdmissionPolicy", &admissionv1.MutatingAdmissionPolicyList{}},
		{"namespace", &corev1.NamespaceList{}},
		{"node", &corev1.NodeList{}},
	}
	for _, l := range lists {
		if err := c.List(ctx, l.list, sel); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				continue // no such API on this cluster
			}
			errs = append(errs, fmt.Errorf("failed to list %ss: %w", l.kind, err))
			continue
		}
		items, err := meta.ExtractList(l.list)
		if err != nil {
			return deleted, fmt.Errorf("failed to read the list of %ss: %w", l.kind, err)
		}
		for _, item := range items {
			if o, ok := item.(client.Object); ok && o.GetDeletionTimestamp() == nil {
				del(l.kind, o)
			}
		}
	}
	errs = append(errs, cleanKueue(ctx, c, sel, del))
	lease := &coordinationv1.Lease{}
	err := c.Get(ctx, client.ObjectKey{Namespace: kwok.LeaseNamespace, Name: kwok.LeaseName}, lease)
	switch {
	case err == nil && kwok.LeaseExpired(lease, clk.Now()):
		del("lease", lease)
	case err != nil && !apierrors.IsNotFound(err):
		errs = append(errs, fmt.Errorf("failed to get lease %s: %w", kwok.LeaseName, err))
	}
	return deleted, errors.Join(errs...)
}
