package probe

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// DeploymentAvailable reports whether a Deployment is Available at its
// latest generation.
func DeploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue && d.Status.ObservedGeneration >= d.Generation
		}
	}
	return false
}
