// Package view puts what a component sees of the cluster in a scenario's
// hands: it stands between a component and the API server, as a
// RoundTripper on the transport of a component in this process or in a
// loopback proxy (Serve) of one in another process, so that the
// component's identity, its client certificate or its bearer token, is the
// one the API server authenticates, audits and authorizes; it holds,
// coalesces or delays the events of the component's watches that a view
// matches, and can serve a (re)starting component's list of a resource as
// of an earlier resourceVersion (StaleAt).
//
// A view matches one resource of one namespace (or one object of it) for
// one component. While it is registered, the events it matches of that
// component's watch streams are kept back:
//
//   - held, until Release delivers them in the order the API server sent
//     them;
//   - coalesced (Coalesce), until Release delivers each object's last state
//     only, so that the component never observes the states in between;
//   - delayed (Delay), each delivered that long after it came.
//
// Events of other objects go on as they come, and an object whose events
// are kept back keeps its later ones behind them: each object's events
// reach the component in the API server's order (or coalesced), never
// reordered. While a stream keeps events back and the API server ends it
// (a watch's timeout), the stream watches again from the last
// resourceVersion it read, so that the component sees one stream, as it
// would have without the view; a watch that cannot be resumed ends once
// its events are delivered.
//
// It reads JSON watch streams, what controller-runtime's clients ask for
// and every custom resource's, and protobuf ones, which
// kube-controller-manager and kube-scheduler ask for of built-in
// resources; streams of other encodings pass untouched.
//
// The Registry knows nothing of scenarios: the runner registers views,
// releases them and reads what they kept back.
package view

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/transport"
	"k8s.io/utils/clock"
)

// View is one view.
type View struct {
	// Name is unique in the registry.
	Name string
	// Component is the component whose watches it sees (sim/identity's
	// names: trainer, jobset).
	Component string
	// Group and Resource are what it matches: the plural resource name
	// and its API group ("" for the core group).
	Group, Resource string
	// Namespace is the only namespace whose objects it matches.
	Namespace string
	// ObjectName, when set, is the only object it matches.
	ObjectName string
	// Coalesce delivers each object's last state only at Release.
	Coalesce bool
	// Delay, when set, delivers each event that long after it came, with
	// no Release.
	Delay time.Duration
	// Partition, when set, cuts the component off the API server, every
	// resource and namespace of it (Group, Resource, Namespace and
	// ObjectName are not read): PartitionRefuse fails each request it
	// sends as a connection refused and ends its open watches;
	// PartitionUnanswered leaves each request waiting, and keeps back what
	// its open watches bring, until Release (then the requests go on and
	// the events are delivered, in the order they came).
	Partition string
	// StaleAt, when set, is a resourceVersion: the component's next list
	// of the resource (of any namespace) is served as of it, and its watch
	// goes on from there; the view keeps back, of the watches opened after
	// that list, the events it matches (those since StaleAt first), and
	// nothing of the watches opened before.
	StaleAt string
	// OnEvent, when set, is called as the view keeps an event back and as
	// it delivers one.
	OnEvent func()
}

// The partitions of View.Partition.
const (
	PartitionRefuse     = "refuse"
	PartitionUnanswered = "unanswered"
)

// Event types of the requests a partition refused or left unanswered
// (Event.Type; their Object is the verb and path).
const (
	EventRequestRefused    = "REQUEST-REFUSED"
	EventRequestUnanswered = "REQUEST-UNANSWERED"
)

// errPartitioned is what a component's transport returns for a request a
// partition refuses: the error of a dial that was refused.
var errPartitioned = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// StaleList is a list a view served as of an earlier resourceVersion.
type StaleList struct {
	// At is when the component listed; ResourceVersion is the view's
	// StaleAt.
	At              time.Time
	ResourceVersion string
	// Status is the API server's answer: "200 OK", or the refusal (the
	// resourceVersion compacted away: 410).
	Status string
}

// Event is an event a view kept back.
type Event struct {
	// At is when the stream read it from the API server.
	At time.Time
	// Type is the watch event's: ADDED, MODIFIED or DELETED.
	Type string
	// Object is kind/name, and ResourceVersion the object's.
	Object, ResourceVersion string
	// Delivered is when the component got it: zero while kept back, and
	// for an event coalesced into a later one or never delivered.
	Delivered time.Time
	// Fate says what ended the wait: empty while kept back.
	Fate string
}

// Coalesced is the Fate of an event a coalescing view replaced by a later
// state of its object.
const Coalesced = "coalesced: the component got a later state of the object instead"

// Registry holds the views of one cluster and wraps the transports of the
// components that may be viewed. The zero value is not usable: NewRegistry.
type Registry struct {
	clock clock.Clock

	mu      sync.Mutex
	views   map[string]*viewState
	streams map[*stream]struct{}
	watched map[string]sets.Set[string] // component -> group/resource

	// waiting counts the CaughtUp calls under way; while there is one,
	// each event a stream reads closes progress (and a new one is made).
	waiting  atomic.Int32
	progress chan struct{}
}

// viewState is a view's: its spec, whether it was released, and the
// events it kept back.
type viewState struct {
	view     View
	released bool
	events   []*Event
	stale    []StaleList   // the lists it served stale: one, once served
	done     chan struct{} // closed at its release
	// keys are the objects (namespace/name) each stream kept events of
	// back for the view.
	keys map[*stream]sets.Set[string]
}

// NewRegistry returns an empty registry timed by clk (nil: the real clock).
func NewRegistry(clk clock.Clock) *Registry {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Registry{clock: clk, views: map[string]*viewState{}, streams: map[*stream]struct{}{}, watched: map[string]sets.Set[string]{}, progress: make(chan struct{})}
}

// Register starts the view: the events it matches from now on are kept
// back (a partition that refuses ends the component's open watches). A
// name already registered is an error.
func (r *Registry) Register(v View) error {
	r.mu.Lock()
	if _, ok := r.views[v.Name]; ok {
		r.mu.Unlock()
		return fmt.Errorf("view %s is already registered", v.Name)
	}
	r.views[v.Name] = &viewState{view: v, done: make(chan struct{}), keys: map[*stream]sets.Set[string]{}}
	var cut []*stream
	if v.Partition == PartitionRefuse {
		for s := range r.streams {
			if s.rt.component == v.Component {
				cut = append(cut, s)
			}
		}
	}
	r.mu.Unlock()
	for _, s := range cut {
		s.cut()
	}
	return nil
}

// Release delivers what the view keeps back (each object's last state,
// when it coalesces), in the order the API server sent it, and stops the
// view: it keeps nothing back after, and its events stay readable. It
// returns how many events it kept back until now, coalesced ones included:
// 0 for a view that keeps back none (or is not registered).
func (r *Registry) Release(name, why string) int {
	r.mu.Lock()
	v := r.views[name]
	if v == nil || v.released {
		r.mu.Unlock()
		return 0
	}
	v.released = true
	close(v.done)
	n := 0
	for _, e := range v.events {
		if e.Fate == "" {
			n++
		}
	}
	streams := r.streamsLocked()
	r.mu.Unlock()
	for _, s := range streams {
		s.release(v, why)
	}
	return n
}

// Unregister releases the view and forgets it.
func (r *Registry) Unregister(name, why string) {
	r.Release(name, why)
	r.mu.Lock()
	delete(r.views, name)
	r.mu.Unlock()
}

// Holding returns copies of the events the view keeps back now.
func (r *Registry) Holding(name string) []Event {
	var out []Event
	for _, e := range r.Events(name) {
		if e.Fate == "" {
			out = append(out, e)
		}
	}
	return out
}

// Events returns copies of every event the view kept back, in the order
// they came.
func (r *Registry) Events(name string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.views[name]
	if v == nil {
		return nil
	}
	out := make([]Event, 0, len(v.events))
	for _, e := range v.events {
		out = append(out, *e)
	}
	return out
}

// StaleLists returns the lists the view served as of its StaleAt.
func (r *Registry) StaleLists(name string) []StaleList {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v := r.views[name]; v != nil {
		return slices.Clone(v.stale)
	}
	return nil
}

// Watched returns the resources (group/resource, "core" for the core
// group) a component has watched through its wrapped transport so far.
func (r *Registry) Watched(component string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sets.List(r.watched[component])
}

// Wrap returns the wrapper of a component's transport (rest.Config.Wrap):
// what makes its watches viewable.
func (r *Registry) Wrap(component string) transport.WrapperFunc {
	return func(rt http.RoundTripper) http.RoundTripper {
		return &roundTripper{reg: r, component: component, next: rt}
	}
}

// streamsLocked returns the open streams; r.mu is held.
func (r *Registry) streamsLocked() []*stream {
	out := make([]*stream, 0, len(r.streams))
	for s := range r.streams {
		out = append(out, s)
	}
	return out
}

// match returns the registered view that matches an object of a stream, or
// nil.
func (r *Registry) match(s *stream, namespace, name string) *viewState {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.views {
		w := v.view
		if !v.released && w.Partition == PartitionUnanswered && w.Component == s.rt.component {
			return v
		}
	}
	for _, v := range r.views {
		w := v.view
		if v.released || w.Partition != "" || w.Component != s.rt.component || w.Group != s.group || w.Resource != s.resource || w.Namespace != namespace || (w.ObjectName != "" && w.ObjectName != name) {
			continue
		}
		// A stale list's view keeps back what the watch after the list
		// brings: the events since its resourceVersion. Streams opened
		// before it go on.
		if w.StaleAt != "" && (len(v.stale) == 0 || s.opened.Before(v.stale[0].At)) {
			continue
		}
		return v
	}
	return nil
}

// record appends an event of object key, which stream s kept back, to a
// view's, under r.mu; a partition's request has no stream.
func (r *Registry) record(v *viewState, s *stream, key string, e *Event) {
	r.mu.Lock()
	v.events = append(v.events, e)
	if s == nil {
		r.mu.Unlock()
		return // a partition's request
	}
	if v.keys[s] == nil {
		v.keys[s] = sets.New[string]()
	}
	v.keys[s].Insert(key)
	r.mu.Unlock()
}

// CaughtUp waits until each watch that kept events of an object back for
// the view has read the object's change at the resourceVersion current
// gives for it (namespace/name: resourceVersion), or has ended: released
// then, the view delivers that change with the rest, where released
// earlier the component would get what the view kept back and that change
// only after (the API server sends a change to each watch in its own
// time: the harness's watch can have it before a component's). Objects
// current has no version of are not waited for. It returns ctx's error,
// with the watches still behind, when ctx ends first.
func (r *Registry) CaughtUp(ctx context.Context, name string, current map[string]string) error {
	r.waiting.Add(1)
	defer r.waiting.Add(-1)
	for {
		r.mu.Lock()
		progress := r.progress
		v := r.views[name]
		keys := map[*stream]sets.Set[string]{}
		if v != nil {
			for s, objects := range v.keys {
				keys[s] = objects.Clone() // record adds to them meanwhile
			}
		}
		r.mu.Unlock()
		var behind []string
		for s, objects := range keys {
			behind = append(behind, s.behind(objects, current)...)
		}
		if len(behind) == 0 {
			return nil
		}
		select {
		case <-progress:
		case <-ctx.Done():
			slices.Sort(behind)
			return fmt.Errorf("%w: %s", context.Cause(ctx), strings.Join(behind, "; "))
		}
	}
}

// progressed wakes the CaughtUp calls under way: a stream read an event
// or ended.
func (r *Registry) progressed() {
	if r.waiting.Load() == 0 {
		return
	}
	r.mu.Lock()
	close(r.progress)
	r.progress = make(chan struct{})
	r.mu.Unlock()
}

// settle sets an event's delivery, under r.mu.
func (r *Registry) settle(e *Event, delivered time.Time, fate string) {
	r.mu.Lock()
	e.Delivered, e.Fate = delivered, fate
	r.mu.Unlock()
}

// roundTripper is a component's wrapped transport.
type roundTripper struct {
	reg       *Registry
	component string
	next      http.RoundTripper
}

// infoFactory parses request paths as the API server does.
var infoFactory = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if v := t.reg.partitionOf(t.component); v != nil {
		if err := t.partitioned(req, v); err != nil {
			return nil, err
		}
	}
	if req.Method != http.MethodGet {
		return t.next.RoundTrip(req)
	}
	info, err := infoFactory.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest || info.Subresource != "" {
		return t.next.RoundTrip(req)
	}
	if v := t.reg.staleFor(t.component, info.APIGroup, info.Resource); v != nil {
		switch {
		case info.Verb == "list":
			return t.staleList(req, v)
		case info.Verb == "watch" && req.URL.Query().Get("sendInitialEvents") == "true":
			return watchListOff(req), nil
		}
	}
	if info.Verb != "watch" {
		return t.next.RoundTrip(req)
	}
	t.reg.mu.Lock()
	if t.reg.watched[t.component] == nil {
		t.reg.watched[t.component] = sets.New[string]()
	}
	t.reg.watched[t.component].Insert(cmpOr(info.APIGroup, "core") + "/" + info.Resource)
	t.reg.mu.Unlock()
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	ct := resp.Header.Get("Content-Type")
	if !viewable(ct) {
		return resp, nil
	}
	s := newStream(t, req, info.APIGroup, info.Resource, ct, resp.Body)
	resp.Body = s.out
	return resp, nil
}

// partitionOf returns the registered view that partitions a component, or
// nil.
func (r *Registry) partitionOf(component string) *viewState {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.views {
		if !v.released && v.view.Partition != "" && v.view.Component == component {
			return v
		}
	}
	return nil
}

// partitioned answers a request of a partitioned component: refused, or
// left waiting until the release or until the component gives up; nil:
// the request goes on.
func (t *roundTripper) partitioned(req *http.Request, v *viewState) error {
	e := &Event{At: t.reg.clock.Now(), Object: req.Method + " " + req.URL.RequestURI()}
	if v.view.Partition == PartitionRefuse {
		e.Type, e.Fate = EventRequestRefused, "refused: the view cuts the component off"
		t.reg.record(v, nil, "", e)
		return errPartitioned
	}
	e.Type = EventRequestUnanswered
	t.reg.record(v, nil, "", e)
	if v.view.OnEvent != nil {
		go v.view.OnEvent()
	}
	select {
	case <-v.done:
		t.reg.settle(e, t.reg.clock.Now(), "sent on at the release")
		return nil
	case <-req.Context().Done():
		t.reg.settle(e, time.Time{}, "never sent: the component gave up waiting")
		return req.Context().Err()
	}
}

// staleFor returns the registered view of a component that serves its
// next list of a resource stale, or nil.
func (r *Registry) staleFor(component, group, resource string) *viewState {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.views {
		w := v.view
		if !v.released && w.StaleAt != "" && len(v.stale) == 0 && w.Component == component && w.Group == group && w.Resource == resource {
			return v
		}
	}
	return nil
}

// staleList sends a list as of the view's StaleAt, and records it: the
// view serves one.
func (t *roundTripper) staleList(req *http.Request, v *viewState) (*http.Response, error) {
	out := req.Clone(req.Context())
	q := out.URL.Query()
	if q.Get("continue") == "" {
		q.Set("resourceVersion", v.view.StaleAt)
		q.Set("resourceVersionMatch", "Exact")
		out.URL.RawQuery = q.Encode()
	}
	at := t.reg.clock.Now()
	resp, err := t.next.RoundTrip(out)
	status := ""
	switch {
	case err != nil:
		status = err.Error()
	default:
		status = resp.Status
	}
	t.reg.mu.Lock()
	v.stale = append(v.stale, StaleList{At: at, ResourceVersion: v.view.StaleAt, Status: status})
	t.reg.mu.Unlock()
	if v.view.OnEvent != nil {
		go v.view.OnEvent()
	}
	return resp, err
}

// watchListOff answers a watch-list request (sendInitialEvents) as an API
// server whose WatchList feature is off does, so that client-go's
// reflector falls back to a list, which a stale view serves: the
// component's own code takes the path it takes on such a cluster.
func watchListOff(req *http.Request) *http.Response {
	const body = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled","reason":"Invalid","details":{"group":"meta.k8s.io","kind":"ListOptions","causes":[{"reason":"FieldValueForbidden","message":"Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled","field":"sendInitialEvents"}]},"code":422}`
	return &http.Response{
		Status:        "422 Unprocessable Entity",
		StatusCode:    http.StatusUnprocessableEntity,
		Proto:         req.Proto,
		ProtoMajor:    req.ProtoMajor,
		ProtoMinor:    req.ProtoMinor,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// Unwrap lets client-go find the transport below (for its connection
// handling).
func (t *roundTripper) Unwrap() http.RoundTripper { return t.next }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Watched resources of the components a view may see, as their managers
// watch them (their informers' group/resource, "core" for the core group):
// a view of any other resource would keep nothing back. An envtest test
// (sim/e2e) holds this list to what the running components watch.
var watches = map[string][]string{
	"trainer": {"core/configmaps", "core/limitranges", "core/secrets", "jobset.x-k8s.io/jobsets", "node.k8s.io/runtimeclasses", "scheduling.x-k8s.io/podgroups", "trainer.kubeflow.org/clustertrainingruntimes", "trainer.kubeflow.org/trainingruntimes", "trainer.kubeflow.org/trainjobs"},
	"jobset":  {"batch/jobs", "core/pods", "core/services", "jobset.x-k8s.io/jobsets"},
	"kueue":   {"core/limitranges", "core/namespaces", "core/nodes", "core/pods", "core/secrets", "jobset.x-k8s.io/jobsets", "kueue.x-k8s.io/admissionchecks", "kueue.x-k8s.io/clusterqueues", "kueue.x-k8s.io/cohorts", "kueue.x-k8s.io/localqueues", "kueue.x-k8s.io/multikueueclusters", "kueue.x-k8s.io/multikueueconfigs", "kueue.x-k8s.io/resourceflavors", "kueue.x-k8s.io/topologies", "kueue.x-k8s.io/workloadpriorityclasses", "kueue.x-k8s.io/workloads", "node.k8s.io/runtimeclasses", "resource.k8s.io/deviceclasses", "resource.k8s.io/resourceslices", "trainer.kubeflow.org/clustertrainingruntimes", "trainer.kubeflow.org/trainingruntimes", "trainer.kubeflow.org/trainjobs"},
	// Its garbage collector watches every resource it can delete, by
	// metadata: the Kueue CRDs too when the cluster runs Kueue.
	"kube-controller-manager": {"admissionregistration.k8s.io/mutatingadmissionpolicies", "admissionregistration.k8s.io/mutatingadmissionpolicybindings", "admissionregistration.k8s.io/mutatingwebhookconfigurations", "admissionregistration.k8s.io/validatingadmissionpolicies", "admissionregistration.k8s.io/validatingadmissionpolicybindings", "admissionregistration.k8s.io/validatingwebhookconfigurations", "apiextensions.k8s.io/customresourcedefinitions", "apiregistration.k8s.io/apiservices", "apps/controllerrevisions", "apps/daemonsets", "apps/deployments", "apps/replicasets", "apps/statefulsets", "autoscaling/horizontalpodautoscalers", "batch/cronjobs", "batch/jobs", "certificates.k8s.io/certificatesigningrequests", "coordination.k8s.io/leases", "core/configmaps", "core/endpoints", "core/limitranges", "core/namespaces", "core/nodes", "core/persistentvolumeclaims", "core/persistentvolumes", "core/pods", "core/podtemplates", "core/replicationcontrollers", "core/resourcequotas", "core/secrets", "core/serviceaccounts", "core/services", "discovery.k8s.io/endpointslices", "flowcontrol.apiserver.k8s.io/flowschemas", "flowcontrol.apiserver.k8s.io/prioritylevelconfigurations", "jobset.x-k8s.io/jobsets", "networking.k8s.io/ingressclasses", "networking.k8s.io/ingresses", "networking.k8s.io/ipaddresses", "networking.k8s.io/networkpolicies", "networking.k8s.io/servicecidrs", "node.k8s.io/runtimeclasses", "policy/poddisruptionbudgets", "rbac.authorization.k8s.io/clusterrolebindings", "rbac.authorization.k8s.io/clusterroles", "rbac.authorization.k8s.io/rolebindings", "rbac.authorization.k8s.io/roles", "resource.k8s.io/deviceclasses", "resource.k8s.io/resourceclaims", "resource.k8s.io/resourceclaimtemplates", "resource.k8s.io/resourceslices", "scheduling.k8s.io/priorityclasses", "scheduling.x-k8s.io/podgroups", "storage.k8s.io/csidrivers", "storage.k8s.io/csinodes", "storage.k8s.io/csistoragecapacities", "storage.k8s.io/storageclasses", "storage.k8s.io/volumeattachments", "storage.k8s.io/volumeattributesclasses", "trainer.kubeflow.org/clustertrainingruntimes", "trainer.kubeflow.org/trainingruntimes", "trainer.kubeflow.org/trainjobs"},
	"kube-scheduler":          {"apps/replicasets", "apps/statefulsets", "core/namespaces", "core/nodes", "core/persistentvolumeclaims", "core/persistentvolumes", "core/pods", "core/replicationcontrollers", "core/services", "policy/poddisruptionbudgets", "resource.k8s.io/deviceclasses", "resource.k8s.io/resourceclaims", "resource.k8s.io/resourceslices", "storage.k8s.io/csidrivers", "storage.k8s.io/csinodes", "storage.k8s.io/csistoragecapacities", "storage.k8s.io/storageclasses", "storage.k8s.io/volumeattachments"},
	"kwok":                    {"coordination.k8s.io/leases", "core/nodes", "core/pods"},
}

// Components are the components a view may see: the Trainer's and
// JobSet's managers, which run in simctl's process (a wrapper of their
// transports), and the components that run as processes (a proxy).
func Components() []string {
	return []string{"trainer", "jobset", "kueue", "kube-controller-manager", "kube-scheduler", "kwok"}
}

// Watches returns the resources (group/resource) a component watches,
// sorted: what a view of it may match.
func Watches(component string) []string { return slices.Clone(watches[component]) }

// WatchedResource returns the group/resource of a plural resource name the
// component watches, and whether it watches one.
func WatchedResource(component, resource string) (group string, ok bool) {
	for _, gr := range watches[component] {
		g, r, _ := strings.Cut(gr, "/")
		if r == resource {
			if g == "core" {
				g = ""
			}
			return g, true
		}
	}
	return "", false
}
