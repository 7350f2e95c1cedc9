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

// serviceAccountPollInterval and ServiceAccountTimeout bound the wait for a
// new namespace's default ServiceAccount.
const (
	serviceAccountPollInterval = 20 * time.Millisecond
	// ServiceAccountTimeout is how long WaitForDefaultServiceAccount waits.
	ServiceAccountTimeout = 30 * time.Second
)

// WaitForDefaultServiceAccount waits until the ServiceAccount controller has
// made the namespace's default ServiceAccount. Until then the ServiceAccount
// admission plugin refuses every Pod that names none (serviceaccount
// "default" not found) and the Job controller backs off: a new namespace is
// ready for Pods once it has one, which is what Kubernetes' own e2e
// framework waits for.
func WaitForDefaultServiceAccount(ctx context.Context, c client.Client, ns string) error {
	key := client.ObjectKey{Namespace: ns, Name: "default"}
	err := wait.PollUntilContextTimeout(ctx, serviceAccountPollInterval, ServiceAccountTimeout, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("failed to see the default ServiceAccount of namespace %s within %s: %w", ns, ServiceAccountTimeout, err)
	}
	return nil
}
