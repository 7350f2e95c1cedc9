package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Progress says how far one manager's controllers have got with what the
// API server told them, per namespace: which version of each object every
// event handler of the manager's informers has handed on (a handler
// returns once its controller's queue has the request, or its predicates
// dropped it), and which requests each controller's queue holds ready or
// is reconciling. It is an observer: the cache, informers, handlers and
// queues are the ones controller-runtime builds, called through unchanged.
// One Progress belongs to one manager: a restarted component gets a new
// one, as its new process would have new queues.
type Progress struct {
	scheme *apiruntime.Scheme
	now    func() time.Time

	mu sync.Mutex
	// handed is, per GroupKind, one record per handler registered on its
	// informer: namespace, name, the resourceVersion last handed on.
	handed map[schema.GroupKind][]map[string]map[string]string
	// queues are the controllers' queues, by controller name.
	queues map[string]*queueState
	// seq orders adds and gets (queueState.added, got).
	seq uint64
}

// queueState is what one controller's queue was given and handed out, as
// far as its callers told it. A request is caught up when a worker got it
// after its last add began, and is done with it: the informer had updated
// its cache before the handler added the request, so that reconcile read
// the change. (A request added while a worker has it, after the worker's
// got, is handed out again once it is done; one added between the queue's
// hand-out and the worker's got is handed out again too, to a reconcile
// that reads what the first already read.)
type queueState struct {
	// added is the sequence number taken when each request's last add
	// (with no delay) began, got when a worker last got it.
	added, got map[reconcile.Request]uint64
	// working are the requests a worker has and has not marked done.
	working map[reconcile.Request]bool
	// done is when a worker last marked a request of each namespace done.
	done map[string]time.Time
}

// caughtUp reports whether request r is caught up (guarded by Progress.mu).
func (q *queueState) caughtUp(r reconcile.Request) bool {
	return !q.working[r] && q.added[r] <= q.got[r]
}

// NewProgress returns a Progress for a manager with scheme s.
func NewProgress(s *apiruntime.Scheme) *Progress {
	return &Progress{scheme: s, now: time.Now, handed: map[schema.GroupKind][]map[string]map[string]string{}, queues: map[string]*queueState{}}
}

// Behind says what the manager has not yet caught up with in namespace ns,
// given the objects the caller has seen there (seen: per GroupKind, name to
// resourceVersion): an object of a kind the manager watches whose version
// seen some handler has not handed on (or one the manager still has and
// seen does not), then a request of ns a controller's queue holds ready or
// is reconciling. It names them without ns, so that its words are the same
// from one run's namespace to the next. Empty when neither: the manager
// has reconciled every change of seen that reached it. idle is when a
// controller last finished a request of ns (zero: never).
//
// A request added with a delay (a requeue after an error or after a
// duration) is a timer, not work handed over: it counts once a worker has
// it, as a cluster's end state read before such a timer fires would not
// show it either.
func (p *Progress) Behind(ns string, seen map[schema.GroupKind]map[string]string) (behind string, idle time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, gk := range slices.SortedFunc(maps.Keys(p.handed), func(a, b schema.GroupKind) int {
		return strings.Compare(a.String(), b.String())
	}) {
		want, ok := seen[gk]
		if !ok {
			continue
		}
		for _, handler := range p.handed[gk] {
			got := handler[ns]
			for _, name := range slices.Sorted(maps.Keys(want)) {
				if v, ok := got[name]; !ok || olderVersion(v, want[name]) {
					return fmt.Sprintf("its informers have not handed on %s %s as seen (resourceVersion %s)", gk.Kind, name, want[name]), time.Time{}
				}
			}
			for _, name := range slices.Sorted(maps.Keys(got)) {
				if _, ok := want[name]; !ok {
					return fmt.Sprintf("its informers have not handed on the deletion of %s %s", gk.Kind, name), time.Time{}
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.queues)) {
		q := p.queues[name]
		requests := maps.Clone(q.working)
		for r := range q.added {
			requests[r] = true
		}
		for _, r := range slices.SortedFunc(maps.Keys(requests), func(a, b reconcile.Request) int {
			return strings.Compare(a.String(), b.String())
		}) {
			if r.Namespace == ns && !q.caughtUp(r) {
				what := "has yet to reconcile"
				if q.working[r] {
					what = "is reconciling"
				}
				return fmt.Sprintf("its %s %s %s", name, what, r.Name), time.Time{}
			}
		}
		if t := q.done[ns]; t.After(idle) {
			idle = t
		}
	}
	return "", idle
}

// olderVersion reports whether resourceVersion a is older than b. Both are
// etcd revisions on every cluster trainersim runs; any other pair counts
// as older unless equal.
func olderVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x < y
}

// NewCache returns what ctrl.Options.NewCache takes: controller-runtime's
// cache, whose informers tell p what each handler registered on them
// handed on.
func (p *Progress) NewCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &progressCache{Cache: c, p: p}, nil
}

// progressCache hands out informers whose handlers report to p.
type progressCache struct {
	cache.Cache
	p *Progress
}

func (c *progressCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	gvk, err := apiutil.GVKForObject(obj, c.p.scheme)
	if err != nil {
		return nil, err
	}
	return &progressInformer{Informer: i, p: c.p, gk: gvk.GroupKind()}, nil
}

func (c *progressCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return &progressInformer{Informer: i, p: c.p, gk: gvk.GroupKind()}, nil
}

// progressInformer registers handlers that report to p once they return.
type progressInformer struct {
	cache.Informer
	p  *Progress
	gk schema.GroupKind
}

func (i *progressInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandler(i.p.handler(i.gk, h))
}

func (i *progressInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithResyncPeriod(i.p.handler(i.gk, h), resync)
}

func (i *progressInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithOptions(i.p.handler(i.gk, h), o)
}

// handler returns h, reporting to p what it handed on.
func (p *Progress) handler(gk schema.GroupKind, h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	record := map[string]map[string]string{}
	p.mu.Lock()
	p.handed[gk] = append(p.handed[gk], record)
	p.mu.Unlock()
	return &progressHandler{inner: h, p: p, record: record}
}

// progressHandler calls its handler, then records the object's version as
// handed on (or its deletion).
type progressHandler struct {
	inner  toolscache.ResourceEventHandler
	p      *Progress
	record map[string]map[string]string // guarded by p.mu
}

func (h *progressHandler) OnAdd(obj any, isInInitialList bool) {
	h.inner.OnAdd(obj, isInInitialList)
	h.set(obj)
}

func (h *progressHandler) OnUpdate(oldObj, newObj any) {
	h.inner.OnUpdate(oldObj, newObj)
	h.set(newObj)
}

func (h *progressHandler) OnDelete(obj any) {
	h.inner.OnDelete(obj)
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	o, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	delete(h.record[o.GetNamespace()], o.GetName())
}

func (h *progressHandler) set(obj any) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	ns := h.record[o.GetNamespace()]
	if ns == nil {
		ns = map[string]string{}
		h.record[o.GetNamespace()] = ns
	}
	ns[o.GetName()] = o.GetResourceVersion()
}

// NewQueue returns what controller.Options.NewQueue takes for the
// controllers of a manager with controller options o: the queue
// controller-runtime builds when NewQueue is not set (its priority queue,
// unless o turns it off), which tells p what it was given and handed out.
func (p *Progress) NewQueue(o config.Controller) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		state := &queueState{added: map[reconcile.Request]uint64{}, got: map[reconcile.Request]uint64{}, working: map[reconcile.Request]bool{}, done: map[string]time.Time{}}
		p.mu.Lock()
		p.queues[name] = state
		p.mu.Unlock()
		var inner priorityqueue.PriorityQueue[reconcile.Request]
		if ptr.Deref(o.UsePriorityQueue, true) {
			inner = priorityqueue.New(name, func(po *priorityqueue.Opts[reconcile.Request]) {
				po.Log = o.Logger.WithValues("controller", name)
				po.RateLimiter = rl
			})
		} else {
			inner = &plainQueue{TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name})}
		}
		return &progressQueue{PriorityQueue: inner, p: p, state: state}
	}
}

// plainQueue gives a rate-limiting queue the priority queue's methods, as
// controller-runtime's own wrapper does when its priority queue is off.
type plainQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
}

func (q *plainQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	for _, item := range items {
		switch {
		case o.RateLimited:
			q.AddRateLimited(item)
		case o.After > 0:
			q.AddAfter(item, o.After)
		default:
			q.Add(item)
		}
	}
}

func (q *plainQueue) GetWithPriority() (reconcile.Request, int, bool) {
	item, shutdown := q.Get()
	return item, 0, shutdown
}

// progressQueue is a controller's queue that tells p when each request's
// adds returned and when a worker got it and was done with it.
type progressQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	p     *Progress
	state *queueState
}

// added records items as added now, unless the add was delayed (a timer).
func (q *progressQueue) added(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.After > 0 || o.RateLimited {
		return
	}
	q.p.mu.Lock()
	defer q.p.mu.Unlock()
	q.p.seq++
	for _, item := range items {
		q.state.added[item] = q.p.seq
	}
}

// An add is recorded before the queue has it: a worker that gets the
// request afterwards reads the cache after it, which the handler had
// updated before it added the request; and a worker that got the request
// before it reads that cache too, since its got is recorded later still
// (queueState).

func (q *progressQueue) Add(item reconcile.Request) {
	q.added(priorityqueue.AddOpts{}, item)
	q.PriorityQueue.Add(item)
}

func (q *progressQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	q.added(o, items...)
	q.PriorityQueue.AddWithOpts(o, items...)
}

func (q *progressQueue) Get() (reconcile.Request, bool) {
	item, shutdown := q.PriorityQueue.Get()
	q.gotten(item, shutdown)
	return item, shutdown
}

func (q *progressQueue) GetWithPriority() (reconcile.Request, int, bool) {
	item, priority, shutdown := q.PriorityQueue.GetWithPriority()
	q.gotten(item, shutdown)
	return item, priority, shutdown
}

// gotten records item as got by a worker now, before it reconciles it.
func (q *progressQueue) gotten(item reconcile.Request, shutdown bool) {
	if shutdown {
		return
	}
	q.p.mu.Lock()
	defer q.p.mu.Unlock()
	q.p.seq++
	q.state.got[item] = q.p.seq
	q.state.working[item] = true
}

func (q *progressQueue) Done(item reconcile.Request) {
	q.PriorityQueue.Done(item)
	q.p.mu.Lock()
	defer q.p.mu.Unlock()
	delete(q.state.working, item)
	q.state.done[item.Namespace] = q.p.now()
}
