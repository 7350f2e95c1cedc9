package runner

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
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
	if s.watch == nil || s.watches.informers() == nil {
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

// podView is one of the scenario's Pods as expectations read it, the
// isolation the harness adds (cluster.StripIsolation) taken out: typed,
// and as an object for pods.all and pods.any. Shared between checks:
// read, never changed.
type podView struct {
	pod corev1.Pod
	obj map[string]any
}

// podViews is the scenario's Pods matching selector, in name order: from
// the watches when cached, each object the watches hold converted once
// (podViewsOf), and the selection kept until a Pod of the namespace
// changes (podLists). An expectation is checked again at every change of
// the namespace, over every Pod: copying and converting every Pod at each
// check made a fleet's checks quadratic in its Pods (half of simctl's CPU
// in the 1,000-node fleet of make bench-scale), and so did, after that,
// the watches' label selection, which copies each Pod's labels, and
// reading each Pod's uid and resourceVersion to find its view (a quarter,
// then a fifth), and then selecting every Pod again at each change of any
// kind (a sixth: most changes of a fleet's namespace are its TrainJobs',
// JobSets', Jobs' and Workloads').
func (s *scenarioRun) podViews(ctx context.Context, selector map[string]string, cached bool) ([]*podView, error) {
	if cached && s.watch != nil {
		key := selectorKey(selector)
		// Counted before the watches are read: a change after it makes
		// the next read list again.
		changes := s.watch.podChangesSeen()
		s.mu.Lock()
		l, ok := s.podLists[key]
		s.mu.Unlock()
		if ok && l.changes == changes {
			return slices.Clone(l.views), nil
		}
		if items, ok := s.watches.shared("Pod", s.ns); ok {
			all, err := s.podViewsOf(items)
			if err != nil {
				return nil, err
			}
			views := make([]*podView, 0, len(all))
			for _, v := range all {
				if hasLabels(v.pod.Labels, selector) {
					views = append(views, v)
				}
			}
			slices.SortFunc(views, func(a, b *podView) int { return strings.Compare(a.pod.Name, b.pod.Name) })
			s.mu.Lock()
			if s.podLists == nil {
				s.podLists = map[string]podList{}
			}
			s.podLists[key] = podList{changes: changes, views: views}
			s.mu.Unlock()
			return slices.Clone(views), nil
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
	views := make([]*podView, 0, len(list.Items))
	for i := range list.Items {
		v, err := newPodView(list.Items[i])
		if err != nil {
			return nil, err
		}
		views = append(views, v)
	}
	return views, nil
}

// podList is what a selector selected of the Pods the watches held after
// the namespace's changes-th Pod change.
type podList struct {
	changes uint64
	views   []*podView
}

// selectorKey spells a selector's labels in key order, as podLists keys
// them.
func selectorKey(selector map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(selector)) {
		b.WriteString(k + "=" + selector[k] + ",")
	}
	return b.String()
}

// hasLabels reports whether labels has every key of want with its value:
// a selector's matchLabels, without building a labels.Selector.
func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// podViewsOf returns the views of items, Pods the watches hold, in their
// order. An informer never changes an object it holds, and replaces it at
// each change of the Pod: a view is made once per object
// (s.podViewsByObj), and the views of objects the watches no longer hold
// are let go once they outnumber those they do.
func (s *scenarioRun) podViewsOf(items []*unstructured.Unstructured) ([]*podView, error) {
	views := make([]*podView, len(items))
	var missing []int
	s.mu.Lock()
	for i, u := range items {
		if v, ok := s.podViewsByObj[u]; ok {
			views[i] = v
		} else {
			missing = append(missing, i)
		}
	}
	s.mu.Unlock()
	for _, i := range missing {
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, &pod); err != nil {
			return nil, err
		}
		v, err := newPodView(pod)
		if err != nil {
			return nil, err
		}
		views[i] = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.podViewsByObj)+len(missing) > 2*len(items)+64 {
		s.podViewsByObj = make(map[*unstructured.Unstructured]*podView, len(items))
		for i, u := range items {
			s.podViewsByObj[u] = views[i]
		}
		return views, nil
	}
	for _, i := range missing {
		s.podViewsByObj[items[i]] = views[i]
	}
	return views, nil
}

// newPodView is the view of pod, which it takes over.
func newPodView(pod corev1.Pod) (*podView, error) {
	cluster.StripIsolation(&pod.Spec)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pod)
	if err != nil {
		return nil, err
	}
	return &podView{pod: pod, obj: obj}, nil
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
