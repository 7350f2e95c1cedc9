package probe

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namespacePollInterval and NamespaceTimeout bound the wait for a new
// namespace's default ServiceAccount and kube-root-ca.crt.
const (
	namespacePollInterval = 20 * time.Millisecond
	// NamespaceTimeout is how long WaitForNamespaceReady waits.
	NamespaceTimeout = 30 * time.Second
)

// rootCAConfigMap is the ConfigMap the root-CA publisher of the controller
// manager makes in every namespace.
const rootCAConfigMap = "kube-root-ca.crt"

// WaitForNamespaceReady waits until the controller manager has made the
// namespace's default ServiceAccount and published its kube-root-ca.crt,
// which is what Kubernetes' own e2e framework waits for. Until the first,
// the ServiceAccount admission plugin refuses every Pod that names none
// (serviceaccount "default" not found) and the Job controller backs off;
// every Pod's token volume projects the second, and a ResourceQuota made
// before it refuses the publisher's create when it counts ConfigMaps.
func WaitForNamespaceReady(ctx context.Context, c client.Client, ns string) error {
	for _, o := range []struct {
		kind, name string
		obj        client.Object
	}{
		{"ServiceAccount", "default", &corev1.ServiceAccount{}},
		{"ConfigMap", rootCAConfigMap, &corev1.ConfigMap{}},
	} {
		key := client.ObjectKey{Namespace: ns, Name: o.name}
		err := wait.PollUntilContextTimeout(ctx, namespacePollInterval, NamespaceTimeout, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, key, o.obj)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return fmt.Errorf("failed to see the %s %s of namespace %s within %s: %w", o.name, o.kind, ns, NamespaceTimeout, err)
		}
	}
	return nil
}
