// Package view puts what a component sees of the cluster in a scenario's
// hands: it stands between a component in this process and the API server
// as a RoundTripper on the component's own transport (so the component's
// identity, its client certificate, is the one the API server
// authenticates, audits and authorizes), and holds, coalesces or delays the
// events of the component's watches that a view matches.
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
// It reads JSON watch streams, what controller-runtime's clients ask for;
// a protobuf stream, which kube-controller-manager and kube-scheduler ask
// for, passes untouched (Stream.Protobuf says so). It cannot stand between
// the API server and a component in another process: that needs a
// loopback proxy.
//
// The Registry knows nothing of scenarios: the runner registers views,
// releases them and reads what they kept back.
package view

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
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
	// OnEvent, when set, is called as the view keeps an event back and as
	// it delivers one.
	OnEvent func()
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
}

// viewState is a view's: its spec, whether it was released, and the
// events it kept back.
type viewState struct {
	view     View
	released bool
	events   []*Event
}

// NewRegistry returns an empty registry timed by clk (nil: the real clock).
func NewRegistry(clk clock.Clock) *Registry {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Registry{clock: clk, views: map[string]*viewState{}, streams: map[*stream]struct{}{}, watched: map[string]sets.Set[string]{}}
}

// Register starts the view: the events it matches from now on are kept
// back. A name already registered is an error.
func (r *Registry) Register(v View) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.views[v.Name]; ok {
		return fmt.Errorf("view %s is already registered", v.Name)
	}
	r.views[v.Name] = &viewState{view: v}
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

// match returns the registered view of a component that matches an
// object of a stream's resource, or nil.
func (r *Registry) match(component, group, resource, namespace, name string) *viewState {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.views {
		w := v.view
		if !v.released && w.Component == component && w.Group == group && w.Resource == resource && w.Namespace == namespace && (w.ObjectName == "" || w.ObjectName == name) {
			return v
		}
	}
	return nil
}

// record appends an event to a view's, under r.mu.
func (r *Registry) record(v *viewState, e *Event) {
	r.mu.Lock()
	v.events = append(v.events, e)
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
	if req.Method != http.MethodGet {
		return t.next.RoundTrip(req)
	}
	info, err := infoFactory.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest || info.Verb != "watch" || info.Subresource != "" {
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
	if !isJSON(resp.Header.Get("Content-Type")) {
		return resp, nil
	}
	s := newStream(t, req, info.APIGroup, info.Resource, resp.Body)
	resp.Body = s.out
	return resp, nil
}

// Unwrap lets client-go find the transport below (for its connection
// handling).
func (t *roundTripper) Unwrap() http.RoundTripper { return t.next }

// isJSON reports whether a watch's content type is JSON.
func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return slices.Contains([]string{"application/json", ""}, strings.TrimSpace(mt))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Watched resources of the components a view may see, as their managers
// watch them (their informers' group/resource, "core" for the core group):
// a view of any other resource would keep nothing back. An envtest test
// (sim/e2e) holds this list to what the running managers watch.
var watches = map[string][]string{
	"trainer": {"core/configmaps", "core/limitranges", "core/secrets", "jobset.x-k8s.io/jobsets", "node.k8s.io/runtimeclasses", "scheduling.x-k8s.io/podgroups", "trainer.kubeflow.org/clustertrainingruntimes", "trainer.kubeflow.org/trainingruntimes", "trainer.kubeflow.org/trainjobs"},
	"jobset":  {"batch/jobs", "core/pods", "core/services", "jobset.x-k8s.io/jobsets"},
}

// Components are the components a view may see: those whose managers run
// in simctl's process.
func Components() []string { return []string{"trainer", "jobset"} }

// Watches returns the resources (group/resource) a component's manager
// watches, sorted: what a view of it may match.
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
