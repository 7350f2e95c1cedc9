package runner

// A scenario's teardown in the order a cluster needs: its namespace is
// deleted (no object can be created in it any more), its TrainJobs,
// JobSets, Jobs and Pods are deleted (gracefully, as the namespace
// controller would, only sooner: its first pass comes seconds later), the
// simulated kubelet (KWOK, on the scenario's nodes) ends the Pods, and
// only then are the nodes deleted. The Jobs go before their Pods: the Job
// controller lets go of a Pod whose Job is gone at once (its tracking
// finalizer), where it would batch the Pod's end into its Job's next sync,
// a second later. Deleted first, the nodes would leave the Pods
// Terminating until the Pod garbage collector removes them (45 to 84 s
// measured on a kept cluster).
// The wait runs beside the next scenarios; Run and RunPlan return once it
// is done, so that a cluster kept after a run holds no Pod nor node of it;
// the namespace, empty of Pods, ends its deletion on its own. On a cluster
// thrown away after the run (Runner.Discarded) none of this is done; a
// scenario that ends with Pods still to schedule (leavesPodsToSchedule)
// has them and what makes them deleted instead (deletePodsAndOwners).

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// teardownPoll is how often the teardown looks whether the namespace's
// Pods, then the namespace, are gone.
const teardownPoll = 100 * time.Millisecond

// deleteNamespaceAndNodes deletes the scenario's namespace, then its Pods
// and what makes them, then, once the Pods are gone, its nodes
// (removeNodesAfterPods).
func (s *scenarioRun) deleteNamespaceAndNodes(ctx context.Context) error {
	bg := client.PropagationPolicy(metav1.DeletePropagationBackground)
	err := s.cluster.Client().Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}, bg)
	if err != nil && !apierrors.IsNotFound(err) {
		return errors.Join(err, s.cluster.RemoveNodes(ctx, s.nodes))
	}
	return s.removeNodesAfterPods(ctx)
}

// leavesPodsToSchedule reports whether the scenario ends with Pods the
// scheduler still tries to place (Pending, on no node, not gated, not
// being deleted), or cannot tell. Left on a Discarded cluster, they would
// be tried again at every node a later scenario adds that has room for
// them (their failed plugin's queueing hint), each try an event and a
// status patch: on the corpus, more requests per scenario than the
// scheduler's own work. Such a scenario's Pods are deleted with what makes
// them (deletePodsAndOwners).
func (s *scenarioRun) leavesPodsToSchedule() bool {
	pods, ok := s.watches.list("Pod", s.ns)
	if !ok {
		return true
	}
	for _, u := range pods {
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pod); err != nil {
			return true
		}
		if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodPending && len(pod.Spec.SchedulingGates) == 0 {
			return true
		}
	}
	return false
}

// deletePodsAndOwners deletes what the Pods of the scenario's namespace
// come from and the Pods: its TrainJobs, JobSets, Jobs and Pods, one
// collection after the other (a TrainJob left would make its JobSet
// again, a JobSet its Jobs, a Job its Pods, in a namespace not being
// deleted), in the background, without waiting. On a Discarded cluster,
// the namespace and nodes stay, as every scenario's do there: deleting the
// namespace instead cost about 90 requests a scenario (the namespace
// controller lists and deletes every namespaced resource type the server
// serves, most of them empty). podsDeleted says whether the Pods'
// deletion was accepted, whatever became of their owners'.
func (s *scenarioRun) deletePodsAndOwners(ctx context.Context) (podsDeleted bool, err error) {
	deleteAll := func(kind string) error {
		gvk := watched[kind].GroupVersion().WithKind(kind)
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		err := s.cluster.Client().DeleteAllOf(ctx, obj, client.InNamespace(s.ns), client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete the %ss of namespace %s: %w", kind, s.ns, err)
		}
		return nil
	}
	var errs []error
	for _, owner := range []string{"TrainJob", "JobSet", "Job"} {
		errs = append(errs, deleteAll(owner))
	}
	podsErr := deleteAll("Pod")
	return podsErr == nil, errors.Join(append(errs, podsErr)...)
}

// podsIn returns how many Pods of namespace ns the shared Pod informer
// holds; false when it has none synced.
func (ws *Watches) podsIn(ns string) (int, bool) {
	if ws == nil || ws.informers() == nil {
		return 0, false
	}
	inf := ws.informers().ForResource(watched["Pod"])
	if !inf.Informer().HasSynced() {
		return 0, false
	}
	pods, err := inf.Lister().ByNamespace(ns).List(labels.Everything())
	if err != nil {
		return 0, false
	}
	return len(pods), true
}

// removeNodesAfterPods deletes the Pods of the scenario's namespace (being
// deleted) and what makes them, and waits, in the background, until it
// has no Pod, then deletes its nodes. Pods that do not go within
// cleanupTimeout are said by Teardowns; a refused deletion of their
// owners is the result, and the Pods are waited for all the same.
func (s *scenarioRun) removeNodesAfterPods(ctx context.Context) error {
	podsDeleted, refused := s.deletePodsAndOwners(ctx)
	if !podsDeleted {
		// Nothing ends the Pods sooner than the namespace controller
		// will: the nodes go now, and the refusal is the result.
		return errors.Join(refused, s.cluster.RemoveNodes(ctx, s.nodes))
	}
	r := s.runner
	r.teardowns.Add(1)
	go func() {
		defer r.teardowns.Done()
		var errs []error
		if err := s.waitPodsGone(); err != nil {
			errs = append(errs, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := s.cluster.RemoveNodes(ctx, s.nodes); err != nil {
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			r.mu.Lock()
			r.leftovers = append(r.leftovers, fmt.Errorf("clean-up of %s: %w", s.ns, err))
			r.mu.Unlock()
		}
	}()
	return refused
}

// waitPodsGone waits, at most cleanupTimeout, until the scenario's
// namespace has no Pod: from the shared Pod informer, or, without one, by
// listing them. It says how many were left, and the last error of a list.
func (s *scenarioRun) waitPodsGone() error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	left := 0
	var last error
	err := wait.PollUntilContextCancel(ctx, teardownPoll, true, func(ctx context.Context) (bool, error) {
		n, ok := s.watches.podsIn(s.ns)
		if !ok {
			var pods corev1.PodList
			if last = s.cluster.Client().List(ctx, &pods, client.InNamespace(s.ns)); last != nil {
				return false, nil
			}
			n = len(pods.Items)
		}
		left = n
		return n == 0, nil
	})
	if err == nil {
		return nil
	}
	if last != nil {
		return fmt.Errorf("the Pods of namespace %s could not be listed for %s after its deletion (%w); its nodes were deleted anyway", s.ns, cleanupTimeout, last)
	}
	return fmt.Errorf("%d Pods of namespace %s were still there %s after its deletion; its nodes were deleted anyway", left, s.ns, cleanupTimeout)
}

// Teardowns waits until the teardowns of the scenarios run so far are
// done, and returns what they left behind (a scenario's Pods still there,
// or nodes that could not be deleted): on a cluster simctl did not start,
// they stay.
func (r *Runner) Teardowns() error {
	r.teardowns.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	err := errors.Join(r.leftovers...)
	r.leftovers = nil
	return err
}
