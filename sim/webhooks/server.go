// Package webhooks serves the admission webhooks that scenarios declare as
// managers: served by this process over TLS on loopback with the cluster's
// serving certificate, each writes its own runtimePatches entry into the
// TrainJobs it is called for. A provider whose API server can reach this
// process offers them (cluster.WebhookServing).
package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/trainersim/trainersim/sim/fieldpath"
	"github.com/trainersim/trainersim/sim/gate"
)

// Webhook is one webhook a scenario declares.
type Webhook struct {
	// Name is the MutatingWebhookConfiguration's name.
	Name string
	// Namespace is the only namespace whose TrainJobs it sees.
	Namespace string
	// Manager and Entry are the runtimePatches entry it writes
	// (Entry is the entry's trainingRuntimeSpec).
	Manager string
	Entry   map[string]any
	// Operations, ReinvocationPolicy and FailurePolicy are the
	// configuration's. The configuration also receives CREATE, so that
	// the API server's call can be probed with a dry run: the webhook
	// answers an operation it does not intercept without a change, and
	// the call is not recorded.
	Operations         []string
	ReinvocationPolicy string
	FailurePolicy      string
	// Labels go on the configuration.
	Labels map[string]string
}

// Call is one call of a scenario webhook, as the webhook saw it.
type Call struct {
	At        time.Time
	Operation string
	Object    string
	// Changed says whether the webhook added or replaced its entry; false:
	// it was there as the webhook writes it.
	Changed bool
	// Added is true when the entry was not there at all.
	Added bool
}

// Server serves the scenario webhooks.
type Server struct {
	ep      *gate.Endpoint
	mu      sync.Mutex
	hooks   map[string]*Webhook // by path
	calls   map[string][]*Call  // by path
	dryRuns map[string]int      // by path
}

// NewServer starts serving on host with the certificate in certDir.
func NewServer(host, certDir string, ca []byte) (*Server, error) {
	s := &Server{hooks: map[string]*Webhook{}, calls: map[string][]*Call{}, dryRuns: map[string]int{}}
	ep, err := gate.Serve(host, certDir, ca, gate.Admission(s.answer))
	if err != nil {
		return nil, fmt.Errorf("failed to serve scenario webhooks: %w", err)
	}
	s.ep = ep
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.ep.Close() }

func webhookPath(w *Webhook) string { return "/trainersim/" + w.Namespace + "/" + w.Name }

// Register serves w and returns its MutatingWebhookConfiguration, for the
// caller to create.
func (s *Server) Register(w Webhook) *admissionregistrationv1.MutatingWebhookConfiguration {
	p := webhookPath(&w)
	s.mu.Lock()
	s.hooks[p] = &w
	s.mu.Unlock()
	var ops []admissionregistrationv1.OperationType
	for _, o := range w.Operations {
		ops = append(ops, admissionregistrationv1.OperationType(o))
	}
	if !slices.Contains(w.Operations, string(admissionv1.Create)) {
		ops = append(ops, admissionregistrationv1.Create) // for the probe
	}
	timeout := int32(10)
	reinvocation := admissionregistrationv1.ReinvocationPolicyType(w.ReinvocationPolicy)
	failure := admissionregistrationv1.FailurePolicyType(w.FailurePolicy)
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Labels: w.Labels},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "trainjobs.trainersim.dev",
			ClientConfig: s.ep.ClientConfig(p),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: ops,
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"trainer.kubeflow.org"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"trainjobs"},
				},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": w.Namespace}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &reinvocation,
			FailurePolicy:           &failure,
			TimeoutSeconds:          ptr.To(timeout),
		}},
	}
}

// Unregister stops serving w and forgets its calls.
func (s *Server) Unregister(w Webhook) {
	p := webhookPath(&w)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.hooks, p)
	delete(s.calls, p)
	delete(s.dryRuns, p)
}

// Calls returns w's calls so far, dry runs left out.
func (s *Server) Calls(w Webhook) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls[webhookPath(&w)] {
		out = append(out, *c)
	}
	return out
}

// DryRunCalled reports whether w has been called for a dry run: the API
// server's configuration has reached it. The error says why the server
// stopped serving, if it did.
func (s *Server) DryRunCalled(w Webhook) (bool, error) {
	if err := s.ep.Err(); err != nil {
		return false, fmt.Errorf("the server of scenario webhooks stopped: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dryRuns[webhookPath(&w)] > 0, nil
}

// answer puts each webhook's entry into the TrainJob of req, at the
// webhook's path, and records the call.
func (s *Server) answer(_ context.Context, path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	s.mu.Lock()
	hook := s.hooks[path]
	s.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	dryRun := req.DryRun != nil && *req.DryRun
	switch {
	case hook == nil:
	case !slices.Contains(hook.Operations, string(req.Operation)):
		if dryRun {
			s.mu.Lock()
			s.dryRuns[path]++
			s.mu.Unlock()
		}
	default:
		call, patch, err := hook.mutate(req)
		switch {
		case err != nil:
			resp.Allowed = false
			resp.Result = &metav1.Status{Message: fmt.Sprintf("trainersim webhook %s: %v", hook.Name, err), Code: http.StatusBadRequest}
		case patch != nil:
			resp.Patch = patch
			resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
		}
		s.record(path, call, dryRun)
	}
	return resp
}

// record counts a dry run of a webhook's path, or keeps the call.
func (s *Server) record(path string, call Call, dryRun bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if dryRun {
		s.dryRuns[path]++
		return
	}
	s.calls[path] = append(s.calls[path], &call)
}

// mutate returns the call and the JSON patch that puts w's entry into the
// TrainJob of req (nil: it is there already, as w writes it, or w writes
// no entry).
func (w *Webhook) mutate(req *admissionv1.AdmissionRequest) (Call, []byte, error) {
	call := Call{At: time.Now(), Operation: string(req.Operation)}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(req.Object.Raw); err != nil {
		return call, nil, err
	}
	call.Object = obj.GetKind() + "/" + obj.GetName()
	if w.Manager == "" {
		return call, nil, nil
	}
	entries, listed, _ := unstructured.NestedSlice(obj.Object, "spec", "runtimePatches")
	want := map[string]any{"manager": w.Manager, "trainingRuntimeSpec": w.Entry}
	index := -1
	for i, e := range entries {
		if m, ok := e.(map[string]any); ok && m["manager"] == w.Manager {
			index = i
		}
	}
	if index >= 0 {
		got, _ := entries[index].(map[string]any)
		if fieldpath.SameJSON(got["trainingRuntimeSpec"], w.Entry) {
			return call, nil, nil
		}
		if t, ok := got["time"]; ok {
			want["time"] = t // the Trainer's webhook stamps it
		}
		entries[index] = want
	} else {
		call.Added = true
		entries = append(entries, want)
	}
	call.Changed = true
	op := "replace"
	if !listed {
		op = "add"
	}
	patch, err := json.Marshal([]map[string]any{{"op": op, "path": "/spec/runtimePatches", "value": entries}})
	return call, patch, err
}
