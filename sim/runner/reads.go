package runner

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// What expectations and the report read comes from the run's watches when
// they are fresh: once they have seen every write of the scenario so far
// (or something newer), they hold what a read from the API server would
// return a moment later, without the request. When they cannot say (a
// resourceVersion that is not a number, watches that did not start or
// lag cacheCatchUp behind), the read goes to the API server.

// wrote records a successful write that returned an object of kind at
// resourceVersion: the watches must have seen it before they are read
// again.
func (s *scenarioRun) wrote(kind, resourceVersion string) {
	if _, ok := watched[kind]; !ok {
		return // never read from the watches
	}
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.unordered = true
		return
	}
	s.written[kind] = max(s.written[kind], rv)
}

// fresh waits, at most cacheCatchUp, until the watches have seen every
// write so far; false: read from the API server.
func (s *scenarioRun) fresh(ctx context.Context) bool {
	if s.watch == nil || s.watches.factory == nil {
		return false
	}
	s.mu.Lock()
	written := make(map[string]uint64, len(s.written))
	for k, v := range s.written {
		written[k] = v
	}
	unordered := s.unordered
	s.mu.Unlock()
	if unordered {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, cacheCatchUp)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
		return s.watch.caughtUp(written), nil
	})
	return err == nil
}

// cachedTarget reads t from the watches: ok false when they do not hold
// its kind (or another version of it).
func (s *scenarioRun) cachedTarget(t v1alpha1.Target) (obj *unstructured.Unstructured, ok bool) {
	gvr, watchedKind := watched[t.Kind]
	apiVersion := t.APIVersion
	if apiVersion == "" {
		apiVersion = v1alpha1.DefaultAPIVersions[t.Kind]
	}
	if !watchedKind || apiVersion != gvr.GroupVersion().String() {
		return nil, false
	}
	ns := t.Namespace
	if ns == "" {
		ns = s.ns
	}
	return s.watches.get(t.Kind, ns, t.Name)
}

// read is get from the watches when cached and they hold t's kind.
func (s *scenarioRun) read(ctx context.Context, t v1alpha1.Target, cached bool) (*unstructured.Unstructured, error) {
	t = s.nodeTarget(t)
	if cached {
		if obj, ok := s.cachedTarget(t); ok {
			if obj == nil {
				gvr := watched[t.Kind]
				return nil, apierrors.NewNotFound(gvr.GroupResource(), t.Name)
			}
			return obj, nil
		}
	}
	return s.get(ctx, t)
}

// listPods is the scenario's Pods matching selector, from the watches
// when cached.
func (s *scenarioRun) listPods(ctx context.Context, selector map[string]string, cached bool) ([]corev1.Pod, error) {
	if cached {
		if items, ok := s.watches.list("Pod", s.ns); ok {
			sel := labels.SelectorFromSet(selector)
			return typedItems[corev1.Pod](items, func(u *unstructured.Unstructured) bool { return sel.Matches(labels.Set(u.GetLabels())) })
		}
	}
	var list corev1.PodList
	opts := []client.ListOption{client.InNamespace(s.ns)}
	if len(selector) > 0 {
		opts = append(opts, client.MatchingLabels(selector))
	}
	if err := s.cluster.Client().List(ctx, &list, opts...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// listEvents is the scenario's Events, from the watches when cached.
func (s *scenarioRun) listEvents(ctx context.Context, cached bool) ([]corev1.Event, error) {
	if cached {
		if items, ok := s.watches.list("Event", s.ns); ok {
			return typedItems[corev1.Event](items, func(*unstructured.Unstructured) bool { return true })
		}
	}
	var list corev1.EventList
	if err := s.cluster.Client().List(ctx, &list, client.InNamespace(s.ns)); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// typedItems converts the items keep selects to T.
func typedItems[T any](items []unstructured.Unstructured, keep func(*unstructured.Unstructured) bool) ([]T, error) {
	var out []T
	for i := range items {
		if !keep(&items[i]) {
			continue
		}
		var t T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, &t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// listTrainJobs is the scenario's TrainJobs, from the watches when cached.
func (s *scenarioRun) listTrainJobs(ctx context.Context, cached bool) ([]unstructured.Unstructured, error) {
	if cached {
		if items, ok := s.watches.list("TrainJob", s.ns); ok {
			return items, nil
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(trainJobList)
	if err := s.cluster.Client().List(ctx, list, client.InNamespace(s.ns)); err != nil {
		return nil, err
	}
	return list.Items, nil
}
