package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/trainersim/trainersim/results"
)

// Watches are the informers of a run: one per watched resource, in every
// namespace, shared by all the run's scenarios. Each change goes to the
// watcher of its namespace, which puts it on the scenario's timeline and
// wakes the scenario's pending expectation. A run lists each resource
// once, at its start, instead of once per scenario.
type Watches struct {
	client dynamic.Interface
	mapper meta.RESTMapper

	mu sync.Mutex
	// factory holds the informers and cancel ends them; Renew replaces
	// both. Guarded by mu.
	factory  dynamicinformer.DynamicSharedInformerFactory
	cancel   context.CancelFunc
	byNS     map[string]*watcher
	problems []string // of the start, given to every watcher
}

// StartWatches starts the informers and waits, at most watchSyncTimeout,
// for their first lists. Problems are recorded, never returned: the
// timeline is a record, not a check, and an expectation that is never
// woken is still re-checked every safetyPollInterval. The watches end at
// Stop.
func StartWatches(ctx context.Context, cfg *rest.Config, mapper meta.RESTMapper) *Watches {
	ws := &Watches{byNS: map[string]*watcher{}, mapper: mapper}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		ws.problems = append(ws.problems, fmt.Sprintf("failed to create watch client: %v", err))
		return ws
	}
	ws.client = client
	ws.factory, ws.cancel, ws.problems = ws.startInformers(ctx)
	return ws
}

// startInformers starts a factory of informers of the watched resources,
// whose changes go to dispatch, and waits, at most watchSyncTimeout, for
// their first lists.
func (ws *Watches) startInformers(ctx context.Context) (dynamicinformer.DynamicSharedInformerFactory, context.CancelFunc, []string) {
	var problems []string
	watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	factory := dynamicinformer.NewDynamicSharedInformerFactory(ws.client, 0)
	for _, kind := range slices.Sorted(maps.Keys(watched)) {
		gvr := watched[kind]
		if _, err := ws.mapper.RESTMapping(schema.GroupKind{Group: gvr.Group, Kind: kind}, gvr.Version); err != nil {
			if kind != "PodGroup" { // optional: only when its CRD is installed
				problems = append(problems, fmt.Sprintf("failed to watch %s: %v", gvr.Resource, err))
			}
			continue
		}
		_, err := factory.ForResource(gvr).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { ws.dispatch(kind, nil, asUnstructured(obj)) },
			UpdateFunc: func(old, obj any) { ws.dispatch(kind, asUnstructured(old), asUnstructured(obj)) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				ws.dispatch(kind, asUnstructured(obj), nil)
			},
		})
		if err != nil {
			problems = append(problems, fmt.Sprintf("failed to watch %s: %v", gvr.Resource, err))
		}
	}
	factory.Start(watchCtx.Done())
	syncCtx, cancelSync := context.WithTimeout(ctx, watchSyncTimeout)
	defer cancelSync()
	for gvr, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			problems = append(problems, fmt.Sprintf("failed to list %s within %s", gvr.Resource, watchSyncTimeout))
		}
	}
	return factory, cancel, problems
}

// informers returns the factory of the informers that run now, nil if
// none started.
func (ws *Watches) informers() dynamicinformer.DynamicSharedInformerFactory {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.factory
}

// Renew replaces the informers by new ones, which list everything anew,
// and returns the problems of their start. A CRD update (a Trainer
// upgrade's) ends every watch of the CRD's resource; the informers watch
// again after a back-off that doubles with each end within two minutes
// (client-go's reflector: 0.8 s, 1.6 s, ... up to 30 s), and meanwhile
// hold objects as the old schema served them. What the new informers list
// reaches each watcher only where it differs from what the watcher was
// given (a newer resourceVersion: a change; an object gone: a deletion),
// so that the timeline shows what changed, once.
func (ws *Watches) Renew(ctx context.Context) []string {
	if ws.client == nil {
		return nil
	}
	factory, cancel, problems := ws.startInformers(ctx)
	ws.mu.Lock()
	old, oldCancel := ws.factory, ws.cancel
	ws.factory, ws.cancel = factory, cancel
	watchers := slices.Collect(maps.Values(ws.byNS))
	ws.mu.Unlock()
	stopInformers(old, oldCancel)
	for _, w := range watchers {
		for kind, gone := range w.missing(ws) {
			for _, obj := range gone {
				ws.dispatch(kind, obj, nil)
			}
		}
	}
	return problems
}

// Stop ends the watches, waiting at most watchStopTimeout.
func (ws *Watches) Stop() {
	ws.mu.Lock()
	factory, cancel := ws.factory, ws.cancel
	ws.mu.Unlock()
	stopInformers(factory, cancel)
}

// stopInformers ends the informers of a factory, waiting at most
// watchStopTimeout.
func stopInformers(factory dynamicinformer.DynamicSharedInformerFactory, cancel context.CancelFunc) {
	if cancel == nil {
		return
	}
	cancel()
	done := make(chan struct{})
	go func() { factory.Shutdown(); close(done) }()
	t := time.NewTimer(watchStopTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// watch returns the watcher of namespace ns, which receives its changes
// from now until the watcher stops, stamped by clk. Call it before the
// namespace exists.
func (ws *Watches) watch(ns string, clk clock.PassiveClock) *watcher {
	w := &watcher{clock: clk, step: setUpStep, changed: make(chan struct{}, 1), release: func() { ws.release(ns) }, seen: map[string]uint64{}, delivered: map[string]*unstructured.Unstructured{}}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w.problems = slices.Clone(ws.problems)
	ws.byNS[ns] = w
	return w
}

func (ws *Watches) release(ns string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.byNS, ns)
}

// dispatch hands a change to the watcher of the object's namespace, unless
// the watcher was given that state already (Renew's informers list what
// the old ones delivered).
func (ws *Watches) dispatch(kind string, old, obj *unstructured.Unstructured) {
	o := obj
	if o == nil {
		o = old
	}
	if o == nil {
		return
	}
	ws.mu.Lock()
	w := ws.byNS[o.GetNamespace()]
	ws.mu.Unlock()
	if w == nil {
		return
	}
	old, ok := w.accept(kind, old, obj)
	if !ok {
		return
	}
	w.observe(kind, old, obj)
	w.notify()
}

// cacheCatchUp bounds the wait until the watches have seen a write.
const cacheCatchUp = 2 * time.Second

// list returns the objects of a watched kind in namespace ns as the
// watches hold them (deep copies), in name order; false when kind is not
// watched or the watches did not start.
func (ws *Watches) list(kind, ns string) ([]unstructured.Unstructured, bool) {
	objs, ok := ws.shared(kind, ns)
	if !ok {
		return nil, false
	}
	items := make([]unstructured.Unstructured, 0, len(objs))
	for _, u := range objs {
		items = append(items, *u.DeepCopy())
	}
	slices.SortFunc(items, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return items, true
}

// shared returns the objects of a watched kind in namespace ns as the
// watches hold them: the informer's own objects, which the caller must not
// change (list copies them); false as for list.
func (ws *Watches) shared(kind, ns string) ([]*unstructured.Unstructured, bool) {
	gvr, ok := watched[kind]
	factory := ws.informers()
	if !ok || factory == nil {
		return nil, false
	}
	objs, err := factory.ForResource(gvr).Lister().ByNamespace(ns).List(labels.Everything())
	if err != nil {
		return nil, false
	}
	items := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return nil, false
		}
		items = append(items, u)
	}
	return items, true
}

// get returns one object of a watched kind as the watches hold it: nil and
// true when they hold none of that name; false as for list.
func (ws *Watches) get(kind, ns, name string) (*unstructured.Unstructured, bool) {
	gvr, ok := watched[kind]
	factory := ws.informers()
	if !ok || factory == nil {
		return nil, false
	}
	o, err := factory.ForResource(gvr).Lister().ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, true
	}
	u, ok := o.(*unstructured.Unstructured)
	if err != nil || !ok {
		return nil, false
	}
	return u.DeepCopy(), true
}

// watcher records the reactions observed in one namespace, stamped with
// its clock when they are observed, and says when anything changed.
type watcher struct {
	clock clock.PassiveClock
	// changed has a value when something in the namespace changed since
	// the last receive from it.
	changed chan struct{}
	release func()
	// seen is the highest resourceVersion of a change seen, by kind.
	seen map[string]uint64
	// delivered is each object of the namespace as its last change left
	// it, by objectKey; a deleted object has none.
	delivered map[string]*unstructured.Unstructured
	// podChanges counts the Pod changes seen (podViews).
	podChanges uint64
	// reaches are the reached expectations being checked, by objectKey.
	reaches map[string][]*reach

	mu   sync.Mutex
	step string
	// recordChanges keeps versions: each TrainJob version seen, with what
	// changed (Runner.RecordChanges).
	recordChanges bool
	versions      []objectVersion
	// last is when the last reaction was observed, a repeated event's
	// left out (eventRepeats).
	last time.Time
	// events are the events seen, by eventKey.
	events   map[string]bool
	entries  []results.TimelineEntry
	dropped  int
	problems []string
	stopped  bool
}

func asUnstructured(obj any) *unstructured.Unstructured {
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

// setStep names the step that runs from now on.
func (w *watcher) setStep(name string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.step = name
}

// objectKey tells the objects of one namespace apart.
func objectKey(kind, name string) string { return kind + "/" + name }

// accept records a change of an object of kind (old nil: added; obj nil:
// deleted) and returns the state it changed from: old, or for an add of an
// object the watcher was given before (Renew's informers list it again),
// that object as it was given. False when the watcher was given this
// state, or a later one, already.
func (w *watcher) accept(kind string, old, obj *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	o := obj
	if o == nil {
		o = old
	}
	key := objectKey(kind, o.GetName())
	rv, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.delivered[key]
	if obj == nil {
		if prev == nil {
			return nil, false // never given, or its deletion was
		}
		delete(w.delivered, key)
	} else {
		if prev != nil && err == nil {
			if p, perr := strconv.ParseUint(prev.GetResourceVersion(), 10, 64); perr == nil && rv <= p {
				return nil, false
			}
		}
		w.delivered[key] = obj
		w.reachGiven(key, obj.Object)
	}
	if kind == "Pod" {
		w.podChanges++
	}
	if err == nil {
		w.seen[kind] = max(w.seen[kind], rv)
	}
	if old == nil {
		old = prev // an add of Renew's informers: a change since prev
	}
	return old, true
}

// missing returns, by kind, the objects the watcher was given that the
// watches no longer hold: their deletions, which informers that listed
// anew never report.
func (w *watcher) missing(ws *Watches) map[string][]*unstructured.Unstructured {
	w.mu.Lock()
	given := maps.Clone(w.delivered)
	w.mu.Unlock()
	out := map[string][]*unstructured.Unstructured{}
	for key, obj := range given {
		kind, _, _ := strings.Cut(key, "/")
		if cur, ok := ws.get(kind, obj.GetNamespace(), obj.GetName()); ok && cur == nil {
			out[kind] = append(out[kind], obj)
		}
	}
	return out
}

// podChangesSeen is how many Pod changes the watcher has seen: what the
// watches hold of the namespace's Pods is the same while it is.
func (w *watcher) podChangesSeen() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.podChanges
}

// caughtUp reports whether the watcher has seen, for each kind of written,
// a change at its resourceVersion or later: the resourceVersions of one
// etcd increase, so the watches then hold what those writes did, or newer.
func (w *watcher) caughtUp(written map[string]uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for kind, rv := range written {
		if w.seen[kind] < rv {
			return false
		}
	}
	return true
}

// holds reports whether the changes delivered to w leave exactly objs of
// kind, each at its resourceVersion.
func (w *watcher) holds(kind string, objs []*unstructured.Unstructured) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for key := range w.delivered {
		if strings.HasPrefix(key, kind+"/") {
			n++
		}
	}
	if n != len(objs) {
		return false
	}
	for _, o := range objs {
		if d, ok := w.delivered[objectKey(kind, o.GetName())]; !ok || d.GetResourceVersion() != o.GetResourceVersion() {
			return false
		}
	}
	return true
}

// delivered reports whether every change the watches hold of namespace
// ns has reached w. An informer stores a change before its handlers get
// it, on goroutines of their own: an expectation that read the store can
// pass before the timeline has the change it read.
func (ws *Watches) delivered(w *watcher, ns string) bool {
	for kind := range watched {
		objs, ok := ws.shared(kind, ns)
		if ok && !w.holds(kind, objs) {
			return false
		}
	}
	return true
}

// settle waits, at most cacheCatchUp, until every change the watches
// hold of namespace ns has reached w; a problem of w's when it does not.
func (ws *Watches) settle(w *watcher, ns string) {
	if w == nil || ws.informers() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cacheCatchUp)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
		return ws.delivered(w, ns), nil
	})
	if err != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.problems = append(w.problems, fmt.Sprintf("the timeline may lack changes: the watches' handlers were still behind their store %s after the last step", cacheCatchUp))
	}
}

// notify says that something changed, without blocking.
func (w *watcher) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// observe records the reactions of one change, old nil for a new object,
// obj nil for a deleted one.
func (w *watcher) observe(kind string, old, obj *unstructured.Unstructured) {
	entries := reactions(kind, old, obj)
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.recordVersion(kind, old, obj, now)
	if len(entries) == 0 {
		return
	}
	if !w.eventRepeats(kind, obj) {
		w.last = now
	}
	for _, e := range entries {
		if len(w.entries) >= MaxTimelineReactions {
			w.dropped++
			continue
		}
		e.At, e.Step = now, w.step
		w.entries = append(w.entries, e)
	}
}

// eventRepeats reports whether obj is a new Event that repeats one seen
// before: the same reporter, object and reason, with another message (an
// update of an Event, its count, is no reaction at all). It is on the
// timeline, but it is no change for quiet: the component says again what
// it said, as the scheduler does each time it retries a Pod it cannot
// place ("0/12 nodes are available: ..." counts every node of the
// cluster, which other runs add and remove), so a namespace whose state
// no longer changes is quiet beside other runs as it is alone.
func (w *watcher) eventRepeats(kind string, obj *unstructured.Unstructured) bool {
	if kind != "Event" || obj == nil {
		return false
	}
	reporter, _, _ := unstructured.NestedString(obj.Object, "reportingComponent")
	if reporter == "" {
		reporter, _, _ = unstructured.NestedString(obj.Object, "source", "component")
	}
	involved, _, _ := unstructured.NestedString(obj.Object, "involvedObject", "uid")
	reason, _, _ := unstructured.NestedString(obj.Object, "reason")
	key := reporter + "/" + involved + "/" + reason
	if w.events[key] {
		return true
	}
	if w.events == nil {
		w.events = map[string]bool{}
	}
	w.events[key] = true
	return false
}

// quiet waits until the namespace has had no change for d, at most max;
// it reports whether it had.
func (w *watcher) quiet(ctx context.Context, d, max time.Duration) bool {
	deadline := time.Now().Add(max)
	for {
		w.mu.Lock()
		last := w.last
		w.mu.Unlock()
		now := w.clock.Now()
		if last.IsZero() || now.Sub(last) >= d {
			return true
		}
		wait := last.Add(d).Sub(now)
		if time.Now().Add(wait).After(deadline) {
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// lastLane is the lane of the last reaction observed in (since, until],
// "" if none.
func (w *watcher) lastLane(since, until time.Time) string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.entries) - 1; i >= 0; i-- {
		at := w.entries[i].At
		if at.After(until) {
			continue
		}
		if !at.After(since) {
			break
		}
		return w.entries[i].Lane
	}
	return ""
}

// stop ends the watcher and returns what it observed. Nothing is recorded
// after it.
func (w *watcher) stop() (entries []results.TimelineEntry, dropped int, problems []string) {
	if w == nil {
		return nil, 0, nil
	}
	if w.release != nil {
		w.release()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	return slices.Clone(w.entries), w.dropped, slices.Clone(w.problems)
}
