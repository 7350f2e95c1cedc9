package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/fieldpath"
	"github.com/trainersim/trainersim/sim/gate"
	"github.com/trainersim/trainersim/sim/identity"
)

// The scenario's gates (spec.gates), served by this process (sim/gate).

// gateName is the cluster-wide name of a scenario's gate.
func (s *scenarioRun) gateName(name string) string { return name + "-" + s.nsSuffix() }

// gateOf builds the server's gate of a scenario's, resolving its resource
// and verb against what the API server serves.
func (s *scenarioRun) gateOf(g *v1alpha1.Gate, dc discovery.DiscoveryInterface) (gate.Gate, error) {
	out := gate.Gate{
		Name: s.gateName(g.Name), Namespace: s.ns, Verb: g.Verb, ObjectName: g.ObjectName,
		Labels: s.clusterLabels(), OnHold: s.watch.notify,
	}
	switch {
	case g.Component != "":
		users, ok := identity.UsersOf(g.Component)
		if !ok {
			return out, fmt.Errorf("gate %s: no user is known for component %s", g.Name, g.Component)
		}
		out.Users = users
	case g.User != "":
		out.Users = []string{g.User}
	case g.Actor != "":
		for _, a := range s.sc.Spec.Actors {
			if a.Name == g.Actor {
				out.FieldManager = a.FieldManager
			}
		}
	}
	resource, _, _ := strings.Cut(g.Resource, "/")
	gvr, err := s.cluster.Client().RESTMapper().ResourceFor(schema.GroupVersionResource{Resource: resource})
	if err != nil {
		return out, fmt.Errorf("gate %s: the API server serves no resource %s: %w", g.Name, resource, err)
	}
	list, err := dc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return out, fmt.Errorf("gate %s: failed to read the API server's resources of %s: %w", g.Name, gvr.GroupVersion(), err)
	}
	served := false
	for _, r := range list.APIResources {
		if r.Name != g.Resource {
			continue
		}
		served = g.Verb == "" || slices.Contains(r.Verbs, g.Verb)
		if !served {
			return out, fmt.Errorf("gate %s: the API server serves no %s of %s (its verbs: %s)", g.Name, g.Verb, g.Resource, strings.Join(r.Verbs, ", "))
		}
	}
	if !served {
		return out, fmt.Errorf("gate %s: the API server serves no resource %s in %s", g.Name, g.Resource, gvr.GroupVersion())
	}
	out.Group, out.Version, out.Resource = gvr.Group, gvr.Version, g.Resource
	if c := g.Change; c != nil {
		out.Change = &gate.Change{From: c.From, To: c.To, Entry: c.Entry}
		if c.Field != "" {
			if out.Change.Path, err = fieldpath.Parse(c.Field); err != nil {
				return out, fmt.Errorf("gate %s: change.field: %w", g.Name, err)
			}
		}
	}
	return out, nil
}

// holdSuffix ends the name of the gate of a webhook's hold.
const holdSuffix = "-hold"

// holdGates are the gates of the scenario webhooks' holds, and their lanes:
// a hold of unsuspends is a gate of anybody's TrainJob update that turns
// spec.suspend from true to false, open after its until step, on the
// webhook's lane, failing as the webhook's failurePolicy says.
func (s *scenarioRun) holdGates() ([]v1alpha1.Gate, []string) {
	var specs []v1alpha1.Gate
	var lanes []string
	for _, w := range s.sc.Spec.Webhooks {
		if w.Hold == nil || w.Hold.Requests != v1alpha1.HoldUnsuspend {
			continue
		}
		specs = append(specs, v1alpha1.Gate{
			Name: w.Name + holdSuffix, Verb: "update", Resource: "trainjobs",
			Change: &v1alpha1.GateChange{Field: "spec.suspend", From: true, To: false},
			Until:  w.Hold.Until,
		})
		lanes = append(lanes, w.Name)
	}
	return specs, lanes
}

// installGates serves the scenario's gates and its webhooks' holds,
// creates their configurations and waits until the API server calls each.
func (s *scenarioRun) installGates(ctx context.Context) error {
	s.gateSpecs = slices.Clone(s.sc.Spec.Gates)
	for _, g := range s.gateSpecs {
		s.gateLanes = append(s.gateLanes, g.Component+g.User+g.Actor)
	}
	holds, lanes := s.holdGates()
	s.gateSpecs, s.gateLanes = append(s.gateSpecs, holds...), append(s.gateLanes, lanes...)
	if len(s.gateSpecs) == 0 {
		return nil
	}
	serving, ok := s.cluster.(cluster.GateServing)
	if !ok {
		return errors.New("this cluster cannot call gates served by simctl (spec.gates and a webhook's hold need envtest)")
	}
	server, err := serving.ServeGates()
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.cluster.Config())
	if err != nil {
		return fmt.Errorf("failed to create a discovery client: %w", err)
	}
	s.gateServer = server
	c := s.cluster.Client()
	for i := range s.gateSpecs {
		g, err := s.gateOf(&s.gateSpecs[i], dc)
		if err != nil {
			return err
		}
		if i >= len(s.sc.Spec.Gates) {
			g.IgnoreFailure = s.holdFailurePolicy(s.gateLanes[i]) == "Ignore"
		}
		s.gates = append(s.gates, g)
		if err := c.Create(ctx, server.Register(g)); err != nil {
			return fmt.Errorf("failed to create the configuration of gate %s: %w", s.gateSpecs[i].Name, err)
		}
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "trainersim-gate-probe"}}
	for i, g := range s.gates {
		if err := waitCalled(ctx, c, probe, "gate "+s.gateSpecs[i].Name, func() (bool, error) { return server.Probed(g.Name) }); err != nil {
			return err
		}
	}
	return nil
}

// holdFailurePolicy is the failurePolicy of the webhook of a name.
func (s *scenarioRun) holdFailurePolicy(webhook string) string {
	for _, w := range s.sc.Spec.Webhooks {
		if w.Name == webhook {
			return w.FailurePolicy
		}
	}
	return ""
}

// uninstallGates opens the gates, deletes their configurations and stops
// serving them.
func (s *scenarioRun) uninstallGates(ctx context.Context) error {
	if s.gateServer == nil {
		return nil
	}
	var errs []error
	for _, g := range s.gates {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: g.Name}}
		if err := client.IgnoreNotFound(s.cluster.Client().Delete(ctx, cfg)); err != nil {
			errs = append(errs, err)
		}
		s.gateServer.Unregister(g.Name)
	}
	return errors.Join(errs...)
}

// release runs a step's release: it fails when the gate holds nothing.
func (s *scenarioRun) release(ctx context.Context, step string, r *v1alpha1.Release) string {
	if r.View != "" {
		return s.releaseView(ctx, step, r)
	}
	if s.gateServer == nil {
		return fmt.Sprintf("gate %s is not installed", r.Gate)
	}
	name := s.gateName(r.Gate)
	if n := s.gateServer.Release(name, fmt.Sprintf("step %q released it", step), r.One); n == 0 {
		return fmt.Sprintf("gate %s holds no request to release: %s (expect it held in a step before)", r.Gate, s.heldSoFar(name))
	}
	return ""
}

// heldSoFar says what a gate has held: "it has held none", or the count
// and how each hold ended.
func (s *scenarioRun) heldSoFar(name string) string {
	reqs := s.gateServer.Requests(name)
	if len(reqs) == 0 {
		return "it has held none so far"
	}
	var ends []string
	for _, r := range reqs {
		ends = append(ends, fmt.Sprintf("%s's %s of %s: %s", who(r.User), r.Verb, r.Object, r.Released))
	}
	return fmt.Sprintf("it has held %d so far, all answered (%s)", len(reqs), strings.Join(ends, "; "))
}

// openGates opens the gates whose until is the step of a name, and every
// gate when step is "" (the scenario ended).
func (s *scenarioRun) openGates(step string) {
	if s.gateServer == nil {
		return
	}
	for i, g := range s.gates {
		until := s.gateSpecs[i].Until
		switch {
		case step == "":
			s.gateServer.Release(g.Name, "the scenario ended", false)
		case until == step:
			s.gateServer.Release(g.Name, fmt.Sprintf("step %q ran (its until)", step), false)
		}
	}
}

// checkHeld checks how many requests gates hold now.
func (s *scenarioRun) checkHeld(wants []v1alpha1.HeldExpectation) string {
	for _, w := range wants {
		if w.View != "" {
			if msg := s.checkViewHeld(w); msg != "" {
				return msg
			}
			continue
		}
		if s.gateServer == nil {
			return fmt.Sprintf("gate %s is not installed", w.Gate)
		}
		name := s.gateName(w.Gate)
		n := len(s.gateServer.Holding(name))
		switch {
		case w.Count == 0 && n == 0:
			return fmt.Sprintf("gate %s holds no request; %s", w.Gate, s.heldSoFar(name))
		case w.Count > 0 && n != w.Count:
			return fmt.Sprintf("gate %s holds %d requests, want %d", w.Gate, n, w.Count)
		}
	}
	return ""
}

// who names the component of a user, or the user.
func who(user string) string {
	if c := identity.Who(user); c != "" {
		return c
	}
	return user
}

// gateEntries are the timeline entries of the requests the gates held,
// each in the lane of the gate's component, user or actor.
func (s *scenarioRun) gateEntries() []results.TimelineEntry {
	if s.gateServer == nil {
		return nil
	}
	var out []results.TimelineEntry
	for i, g := range s.gates {
		spec, lane := s.gateSpecs[i], s.gateLanes[i]
		for _, r := range s.gateServer.Requests(g.Name) {
			released := "still held"
			if r.Released != "" {
				released = fmt.Sprintf("let through after %s: %s", r.HeldFor.Round(time.Millisecond), r.Released)
			}
			if r.Released == gate.Abandoned {
				released = fmt.Sprintf("held %s: %s", r.HeldFor.Round(time.Millisecond), r.Released)
			}
			out = append(out, results.TimelineEntry{
				At:      r.At,
				Lane:    lane,
				Kind:    results.EntryRequestHeld,
				Object:  r.Object,
				Summary: fmt.Sprintf("gate %s held %s's %s of %s (%s); %s", spec.Name, who(r.User), r.Verb, r.Object, r.Resource, released),
			})
		}
	}
	return out
}

// abandonedHolds names the gate of each request a gate held until the
// API server stopped waiting for it (results.Scenario.AbandonedHolds).
func (s *scenarioRun) abandonedHolds() []string {
	if s.gateServer == nil {
		return nil
	}
	var out []string
	for i, g := range s.gates {
		for _, r := range s.gateServer.Requests(g.Name) {
			if r.Released == gate.Abandoned {
				out = append(out, s.gateSpecs[i].Name)
			}
		}
	}
	return out
}

// releaseVerb is the verb of a group's release entry in reports: a
// controller's held requests let through, whose answer is the entry's.
const releaseVerb = "release"

// answerTimeout bounds the wait for the API server's answer to a request a
// group's release let through.
const answerTimeout = 30 * time.Second

// prepareRelease prepares a release entry of a concurrently group as a
// write: it lets the gate's held requests through and returns once the
// API server has answered each (from its audit log), with the answer of
// the first it refused as its error. So an interleaving puts a
// controller's request in its order as it puts an actor's write: answered
// before the next is sent.
func (s *scenarioRun) prepareRelease(st *v1alpha1.Step) *prepared {
	r := st.Release
	var spec *v1alpha1.Gate
	for i := range s.sc.Spec.Gates {
		if s.sc.Spec.Gates[i].Name == r.Gate {
			spec = &s.sc.Spec.Gates[i]
		}
	}
	p := &prepared{verb: v1alpha1.Verb{Name: releaseVerb}, target: writeTarget{kind: "gate", name: r.Gate}}
	if spec != nil {
		p.write.Actor, p.write.FieldManager = spec.Component, spec.Component
	}
	p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
		if s.gateServer == nil || spec == nil {
			return nil, fmt.Errorf("gate %s is not installed", r.Gate)
		}
		name := s.gateName(r.Gate)
		held := s.gateServer.Holding(name)
		if r.One && len(held) > 1 {
			held = held[:1]
		}
		since := s.clock.Now()
		if s.gateServer.Release(name, fmt.Sprintf("write %q released it", st.Name), r.One) == 0 {
			return nil, fmt.Errorf("gate %s holds no request to release: %s (expect it held in a step before)", r.Gate, s.heldSoFar(name))
		}
		var what []string
		for _, h := range held {
			what = append(what, fmt.Sprintf("%s's %s of %s", who(h.User), h.Verb, h.Object))
		}
		p.target.name = fmt.Sprintf("%s: %s", r.Gate, strings.Join(what, ", "))
		answers, err := s.answers(ctx, held, since)
		if err != nil {
			return nil, err
		}
		for _, a := range answers {
			if a.Code >= 300 {
				return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(a.Code), Reason: metav1.StatusReason(a.Reason), Message: a.Message}}
			}
			recordStatus(ctx, a.Code)
		}
		return nil, nil
	}
	return p
}

// answers waits until the API server's audit log records its answer to
// each held request, answered after since: the same user's write of the
// same resource and object (the verb may differ: a server-side apply that
// creates an object is a patch to the audit log and a create to admission).
func (s *scenarioRun) answers(ctx context.Context, held []gate.Request, since time.Time) ([]cluster.ComponentRequest, error) {
	auditing, ok := s.cluster.(cluster.RequestAuditing)
	if !ok {
		return nil, errors.New("this cluster records no requests of components (a release in a concurrently group needs a cluster simctl starts: envtest or kind)")
	}
	out := make([]cluster.ComponentRequest, len(held))
	var last error
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, answerTimeout, true, func(context.Context) (bool, error) {
		reqs, err := auditing.ComponentRequests(s.ns)
		if last = err; err != nil {
			return false, nil
		}
		found := 0
		for i, h := range held {
			_, name, _ := strings.Cut(h.Object, "/")
			for _, r := range reqs {
				resource := r.Resource
				if r.Subresource != "" {
					resource += "/" + r.Subresource
				}
				if r.User == h.User && resource == h.Resource && r.Name == name && !r.At.Before(since.Truncate(time.Microsecond)) {
					out[i] = r
					found++
					break
				}
			}
		}
		return found == len(held), nil
	})
	if err != nil {
		return nil, fmt.Errorf("the API server's audit log has no answer to the requests let through within %s (%v): %w", answerTimeout, last, err)
	}
	return out, nil
}
