package probe

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// TrainJobPods lists the Pods of a TrainJob (those of the JobSet of the same
// name that the Trainer creates), sorted by name.
func TrainJobPods(ctx context.Context, c client.Reader, namespace, trainJob string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: trainJob}); err != nil {
		return nil, fmt.Errorf("failed to list pods of trainjob %s/%s: %w", namespace, trainJob, err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	return pods.Items, nil
}

// PodScheduledCondition returns a Pod's PodScheduled condition, or nil. When
// the scheduler cannot place a Pod it sets it False with reason
// Unschedulable and a message naming what every node lacked.
func PodScheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
