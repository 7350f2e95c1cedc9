package runner

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/releases"
)

// The components' requests, as the API server's audit log records them.

// noAuditLog says that a cluster records no requests of components.
const noAuditLog = "this cluster records no requests of components (expect.requests needs a cluster simctl starts: envtest or kind)"

// componentRequests returns the requests of the scenario's components
// (spec.components: Kueue) to TrainJobs of the scenario's namespace; false
// when the cluster records none.
func (s *scenarioRun) componentRequests() ([]cluster.ComponentRequest, bool, error) {
	auditing, ok := s.cluster.(cluster.RequestAuditing)
	if !ok {
		return nil, false, nil
	}
	reqs, err := auditing.ComponentRequests(s.ns)
	reqs = slices.DeleteFunc(reqs, func(r cluster.ComponentRequest) bool {
		return r.Resource != "trainjobs" || r.Subresource != "" || !slices.Contains(releases.Components, r.Component)
	})
	return reqs, true, err
}

// checkRequests checks every request expectation against one read of the
// audit log.
func (s *scenarioRun) checkRequests(wants []v1alpha1.RequestExpectation) string {
	reqs, ok, err := s.componentRequests()
	switch {
	case !ok:
		return noAuditLog
	case err != nil:
		return fmt.Sprintf("failed to read the API server's audit log: %v", err)
	}
	for i := range wants {
		if msg := checkRequest(reqs, &wants[i]); msg != "" {
			return msg
		}
	}
	return ""
}

// checkRequest checks that one of reqs is a request of want's component
// that matches want.
func checkRequest(reqs []cluster.ComponentRequest, want *v1alpha1.RequestExpectation) string {
	object := want.Target.Kind + "/" + want.Target.Name
	var seen []string
	for _, r := range reqs {
		if r.Component != want.Component || r.Name != want.Target.Name {
			continue
		}
		if (want.Verb == "" || r.Verb == want.Verb) && r.Code == want.Status && strings.Contains(r.Message, want.MessageContains) {
			return ""
		}
		seen = append(seen, answer(r))
	}
	verb := want.Verb
	if verb == "" {
		verb = "request"
	}
	wanted := fmt.Sprintf("%s's %s of %s answered %d", want.Component, verb, object, want.Status)
	if want.MessageContains != "" {
		wanted += fmt.Sprintf(" with a message containing %q", want.MessageContains)
	}
	if len(seen) == 0 {
		return fmt.Sprintf("no %s: %s sent no request about %s", wanted, want.Component, object)
	}
	return fmt.Sprintf("no %s; its requests about it: %s", wanted, strings.Join(seen, "; "))
}

// answer says what a request got: "patch: 409 Conflict: <message>".
func answer(r cluster.ComponentRequest) string {
	out := fmt.Sprintf("%s: %d", r.Verb, r.Code)
	if r.Reason != "" {
		out += " " + r.Reason
	}
	if r.Message != "" {
		out += ": " + r.Message
	}
	return out
}

// componentLanes are the timeline lanes of the components whose lane is
// not their name.
var componentLanes = map[string]string{
	"kube-controller-manager/job-controller": LaneJobController,
	"kube-scheduler":                         LaneScheduler,
}

// refusedRequests are the timeline entries of the requests of every
// component (the Trainer, JobSet, kube-controller-manager's controllers,
// the scheduler, KWOK, Kueue) that the API server refused, each in its
// component's lane (the requests it applied are there already, as the
// changes the watches saw); a log that cannot be read is a problem of the
// timeline.
func (s *scenarioRun) refusedRequests() ([]results.TimelineEntry, error) {
	auditing, ok := s.cluster.(cluster.RequestAuditing)
	if !ok {
		return nil, nil
	}
	all, err := auditing.ComponentRequests(s.ns)
	s.mu.Lock()
	own := slices.Clone(s.own)
	s.mu.Unlock()
	var out []results.TimelineEntry
	for _, r := range all {
		if r.Code < 400 {
			continue
		}
		kind := s.kindOf(r.Resource)
		object := kind + "/" + r.Name
		if r.Subresource != "" {
			object += " (" + r.Subresource + ")"
		}
		detail := r.Message
		if r.Code == http.StatusConflict && r.SentResourceVersion != "" {
			if changes := changedBy(kind, r.Name, r.SentResourceVersion, r.At, own, all); len(changes) > 0 {
				detail += fmt.Sprintf("\nthe object changed since resourceVersion %s: %s", r.SentResourceVersion, strings.Join(changes, ", "))
			}
		}
		lane := r.Component
		if l, ok := componentLanes[lane]; ok {
			lane = l
		}
		out = append(out, results.TimelineEntry{
			At:      r.At,
			Lane:    lane,
			Kind:    results.EntryRequestRefused,
			Object:  object,
			Summary: fmt.Sprintf("%s's %s of %s refused: %d %s", r.Component, r.Verb, object, r.Code, r.Reason),
			Detail:  detail,
		})
	}
	return out, err
}

// kindOf is the kind of a resource the API server serves (jobsets: JobSet),
// or the resource itself when it cannot say.
func (s *scenarioRun) kindOf(resource string) string {
	gvk, err := s.cluster.Client().RESTMapper().KindFor(schema.GroupVersionResource{Resource: resource})
	if err != nil {
		return resource
	}
	return gvk.Kind
}
