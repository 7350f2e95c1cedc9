// Package gate holds a scenario's chosen requests of real components inside
// the API server, and lets them through when the scenario says: the way a
// scenario puts controllers in an order of its choosing.
//
// A gate is a validating admission webhook served by this process over TLS.
// The API server calls it for every write of the gate's resource in the
// scenario's namespace; the gate answers at once a request it does not
// match, and holds one it matches (a component's or user's verb on a named
// object, optionally a change of a field) until it is released, as a slow
// webhook keeps a write waiting. It never changes a request: what follows a
// held request (its resourceVersion checked against the object as it is
// when the request goes on, a 409) is the API server's doing. A request the
// API server stops waiting for (after the webhook's timeout, 30 s at most)
// is never answered: it fails as failurePolicy Fail says, and the gate
// records it as abandoned.
//
// The Server knows nothing of scenarios: the runner declares gates
// (Register), releases them and reads what they held.
package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/trainersim/trainersim/sim/fieldpath"
)

// Timeout is the webhook timeout of a gate, the most the API server allows:
// the longest a request can be held.
const Timeout = 30 * time.Second

// Abandoned is the Released of a request the API server stopped waiting for.
const Abandoned = "the API server stopped waiting (after 30 s, or as the client went away): never answered, refused as failurePolicy Fail"

// ProbeResource is what the second webhook of every gate's configuration
// intercepts: a server-side dry-run create of a ConfigMap in the gate's
// namespace shows that the API server calls the gate (Probed).
const ProbeResource = "configmaps"

// Gate is one gate.
type Gate struct {
	// Name is its ValidatingWebhookConfiguration's, unique in the cluster.
	Name string
	// Namespace is the only namespace whose requests it sees.
	Namespace string
	// Users, when set, are the users whose requests it holds (a
	// component's, from sim/identity); FieldManager, when set, the field
	// manager a request must name (an actor's). Empty: anybody's.
	Users        []string
	FieldManager string
	// Verb is the request's: create, update (or patch: one to admission)
	// or delete. Empty: any write.
	Verb string
	// Group, Version and Resource are what it intercepts (Resource may name
	// a subresource: pods/binding, pods/status, trainjobs/status).
	Group, Version, Resource string
	// ObjectName, when set, is the object's name (a Pod's for pods/binding).
	ObjectName string
	// Change, when set, is the change a request must make.
	Change *Change
	// Labels go on the configuration.
	Labels map[string]string
	// IgnoreFailure makes the API server go on with a request whose call
	// fails (a hold it stopped waiting for) instead of refusing it: the
	// failurePolicy Ignore of a scenario webhook's hold. Default: Fail.
	IgnoreFailure bool
	// OnHold, when set, is called as the gate begins to hold a request.
	OnHold func()
}

// Change is a change of the object a request must make to be held: a field
// whose value goes from From to To (JSON values), or a new runtimePatches
// entry of a manager.
type Change struct {
	// Path is the field from the object's root, list items selected by key
	// or position: spec.suspend, status.jobsStatus[name=node].active.
	Path fieldpath.Path
	// From and To are its values before and after, compared as JSON. Nil
	// From is any value other than To (absent included), nil To any value
	// other than From: the field changes either way.
	From, To any
	// Entry, instead of Path, is a manager whose spec.runtimePatches entry
	// the request adds.
	Entry string
}

// Request is a request a gate held.
type Request struct {
	// At is when the gate began to hold it.
	At time.Time
	// User sent it; Verb, Resource (with its subresource) and Object
	// (kind/name) say what it was.
	User, Verb, Resource, Object string
	// HeldFor is how long it was held, and Released what ended the hold:
	// empty while held, Abandoned when the API server stopped waiting.
	HeldFor  time.Duration
	Released string
	released chan struct{}
}

// state is a gate's: its spec, what it holds and held, whether it is open.
type state struct {
	gate     Gate
	open     bool
	holding  []*Request
	requests []*Request
	probes   int
}

// Server serves the gates.
type Server struct {
	ep     *Endpoint
	mu     sync.Mutex
	gates  map[string]*state // by path
	delays map[string]*delayState
}

// NewServer starts serving on host with the certificate (tls.crt, tls.key)
// in certDir, which ca (the API server's trust for it) signed.
func NewServer(host, certDir string, ca []byte) (*Server, error) {
	s := newState()
	ep, err := Serve(host, certDir, ca, Admission(s.answer))
	if err != nil {
		return nil, fmt.Errorf("failed to serve gates: %w", err)
	}
	s.ep = ep
	return s, nil
}

// newState is a server's state before it serves, on an endpoint that
// serves nothing.
func newState() *Server {
	return &Server{ep: &Endpoint{}, gates: map[string]*state{}}
}

// Close releases every gate and stops the server.
func (s *Server) Close() error {
	s.mu.Lock()
	var names []string
	for _, st := range s.gates {
		names = append(names, st.gate.Name)
	}
	s.mu.Unlock()
	for _, n := range names {
		s.Release(n, "the server stopped", false)
	}
	return s.ep.Close()
}

func gatePath(name string) string { return "/gate/" + name }

// operation is the admission operation of a verb.
func operation(verb string) []admissionregistrationv1.OperationType {
	switch verb {
	case "create":
		return []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	case "update", "patch":
		return []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	case "delete":
		return []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
	}
	return []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
}

// Register serves g, closed, and returns its configuration for the caller
// to create.
func (s *Server) Register(g Gate) *admissionregistrationv1.ValidatingWebhookConfiguration {
	p := gatePath(g.Name)
	s.mu.Lock()
	s.gates[p] = &state{gate: g}
	s.mu.Unlock()
	ns := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": g.Namespace}}
	failure := admissionregistrationv1.Fail
	if g.IgnoreFailure {
		failure = admissionregistrationv1.Ignore
	}
	hook := func(name string, ops []admissionregistrationv1.OperationType, group, version, resource string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:                    name,
			ClientConfig:            s.ep.ClientConfig(p),
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}}}},
			NamespaceSelector:       ns,
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           ptr.To(failure),
			TimeoutSeconds:          ptr.To(int32(Timeout / time.Second)),
		}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: g.Name, Labels: g.Labels},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("gate.trainersim.dev", operation(g.Verb), g.Group, g.Version, g.Resource),
			hook("probe.gate.trainersim.dev", []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, "", "v1", ProbeResource),
		},
	}
}

// Unregister answers what g holds and stops serving it.
func (s *Server) Unregister(name string) {
	s.Release(name, "the scenario ended", false)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.gates, gatePath(name))
}

// Release answers what the gate of a name holds, for the reason given, and
// opens it: it holds nothing after. With one, it answers the request it has
// held longest and stays closed. It returns how many requests it answered.
func (s *Server) Release(name, reason string, one bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.gates[gatePath(name)]
	if st == nil {
		return 0
	}
	n := len(st.holding)
	if one {
		n = min(n, 1)
	} else {
		st.open = true
	}
	now := time.Now()
	for _, r := range st.holding[:n] {
		r.HeldFor, r.Released = now.Sub(r.At), reason
		close(r.released)
	}
	st.holding = st.holding[n:]
	return n
}

// Holding returns the requests the gate of a name holds now, oldest first.
func (s *Server) Holding(name string) []Request {
	return s.copies(name, func(st *state) []*Request { return st.holding })
}

// Requests returns every request the gate of a name has held, oldest
// first.
func (s *Server) Requests(name string) []Request {
	return s.copies(name, func(st *state) []*Request { return st.requests })
}

func (s *Server) copies(name string, of func(*state) []*Request) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.gates[gatePath(name)]
	if st == nil {
		return nil
	}
	var out []Request
	for _, r := range of(st) {
		c := *r
		c.released = nil
		out = append(out, c)
	}
	return out
}

// WaitUnheld waits until none of the gates named holds a request of one of
// users (a crashed component's: the API server stops waiting for a request
// whose client went away, and the gate sees its call end), polling every
// 20 ms. It returns the requests still held when ctx ends first.
func (s *Server) WaitUnheld(ctx context.Context, names, users []string) ([]Request, error) {
	held := func() []Request {
		var out []Request
		for _, name := range names {
			for _, r := range s.Holding(name) {
				if slices.Contains(users, r.User) {
					out = append(out, r)
				}
			}
		}
		return out
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		left := held()
		if len(left) == 0 {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return left, ctx.Err()
		case <-tick.C:
		}
	}
}

// Open reports whether the gate of a name has been released whole.
func (s *Server) Open(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.gates[gatePath(name)]
	return st != nil && st.open
}

// Probed reports whether the API server has called the gate of a name for
// a dry run of its probe: its configuration is in force. The error says
// why the server stopped serving, if it did.
func (s *Server) Probed(name string) (bool, error) {
	if err := s.ep.Err(); err != nil {
		return false, fmt.Errorf("the gate server stopped: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.gates[gatePath(name)]
	return st != nil && st.probes > 0, nil
}

// answer lets req through, after its delay or once its gate opens.
func (s *Server) answer(ctx context.Context, path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if d, ok := s.delay(path, req); ok {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			if d >= delayTimeout {
				// The API server's timeout: the shaker's delay failed
				// the request. Before it, the request's own client went
				// away (a crashed component's), which no delay caused.
				s.delayAbandoned(path)
			}
			return nil // the API server stopped waiting: the request failed
		}
	} else if held := s.admit(path, req); held != nil && !s.wait(ctx, path, held) {
		return nil // the API server stopped waiting: nobody reads an answer
	}
	return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
}

// admit counts a probe, or returns the request the gate at path is to
// hold, nil when it lets req through at once.
func (s *Server) admit(path string, req *admissionv1.AdmissionRequest) *Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.gates[path]
	if st == nil {
		return nil
	}
	if req.Resource.Resource == ProbeResource && req.Kind.Kind == "ConfigMap" {
		if req.DryRun != nil && *req.DryRun {
			st.probes++
		}
		return nil
	}
	if st.open || (req.DryRun != nil && *req.DryRun) || !Matches(&st.gate, req) {
		return nil
	}
	resource := req.Resource.Resource
	if req.SubResource != "" {
		resource += "/" + req.SubResource
	}
	held := &Request{
		At: time.Now(), User: req.UserInfo.Username, Verb: Verb(req), Resource: resource,
		Object: req.Kind.Kind + "/" + req.Name, released: make(chan struct{}),
	}
	st.holding = append(st.holding, held)
	st.requests = append(st.requests, held)
	return held
}

// wait holds r until it is released, and reports whether it was; false:
// the API server stopped waiting first (ctx, the request's, is done).
func (s *Server) wait(ctx context.Context, path string, r *Request) bool {
	s.mu.Lock()
	onHold := s.gates[path].gate.OnHold
	s.mu.Unlock()
	if onHold != nil {
		onHold()
	}
	select {
	case <-r.released:
		return true
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.Released != "" {
			return true // released as the API server gave up: too late all the same
		}
		r.HeldFor, r.Released = time.Since(r.At), Abandoned
		if st := s.gates[path]; st != nil {
			st.holding = slices.DeleteFunc(st.holding, func(o *Request) bool { return o == r })
		}
		return false
	}
}

// Verb is the verb of an admission request as admission sees it: create,
// update or delete. A patch is an update: the API server hands admission a
// patch's options as UpdateOptions (apiserver's patchToUpdateOptions), so
// nothing in the request tells the two apart; a server-side apply that
// creates an object is a create.
func Verb(req *admissionv1.AdmissionRequest) string {
	return strings.ToLower(string(req.Operation))
}

// sameVerb reports whether a request of verb got is one of a gate's verb
// want: patch and update are one to admission.
func sameVerb(want, got string) bool {
	if want == "patch" {
		want = "update"
	}
	return want == got
}

// fieldManager is the field manager a request's options name.
func fieldManager(req *admissionv1.AdmissionRequest) string {
	var opts struct {
		FieldManager string `json:"fieldManager"`
	}
	_ = json.Unmarshal(req.Options.Raw, &opts)
	return opts.FieldManager
}

// Matches reports whether g holds req (the API server already matched its
// resource, operation and namespace).
func Matches(g *Gate, req *admissionv1.AdmissionRequest) bool {
	if len(g.Users) > 0 && !slices.Contains(g.Users, req.UserInfo.Username) {
		return false
	}
	if g.FieldManager != "" && fieldManager(req) != g.FieldManager {
		return false
	}
	if g.Verb != "" && !sameVerb(g.Verb, Verb(req)) {
		return false
	}
	if g.ObjectName != "" && req.Name != g.ObjectName {
		return false
	}
	return g.Change == nil || g.Change.made(req.OldObject.Raw, req.Object.Raw)
}

// made reports whether an object going from old to new makes the change.
func (c *Change) made(old, new []byte) bool {
	var before, after map[string]any
	if json.Unmarshal(old, &before) != nil || json.Unmarshal(new, &after) != nil {
		return false
	}
	if c.Entry != "" {
		return !hasEntry(before, c.Entry) && hasEntry(after, c.Entry)
	}
	was, is := lookup(before, c.Path), lookup(after, c.Path)
	if fieldpath.SameJSON(was, is) {
		return false
	}
	return (c.From == nil || fieldpath.SameJSON(was, c.From)) && (c.To == nil || fieldpath.SameJSON(is, c.To))
}

// lookup returns the value at path of obj, nil when absent.
func lookup(obj map[string]any, path fieldpath.Path) any {
	v, err := fieldpath.Lookup(obj, path)
	if err != nil {
		return nil
	}
	return v
}

// hasEntry reports whether a TrainJob has a runtimePatches entry of manager.
func hasEntry(obj map[string]any, manager string) bool {
	entries, _ := lookup(obj, fieldpath.Path{fieldpath.Field("spec"), fieldpath.Field("runtimePatches")}).([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["manager"] == manager {
			return true
		}
	}
	return false
}
