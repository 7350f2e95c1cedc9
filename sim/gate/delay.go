package gate

import (
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Delays: the shaker's path through the gates. A delay webhook answers
// every write in a namespace after a time its Delay function chooses, the
// way a busy controller or a slow network would, so that the orders of
// requests nothing in a scenario orders vary from run to run.

// delayTimeout is the webhook timeout of a delay: far above any delay.
const delayTimeout = 10 * time.Second

// Delayer delays the writes of one namespace.
type Delayer struct {
	// Name is its ValidatingWebhookConfiguration's, unique in the cluster.
	Name string
	// Namespace is the only namespace whose writes it delays.
	Namespace string
	// Delay is how long to hold a request before answering it: a
	// request's key (user, field manager, verb, resource, name) and how
	// many requests of that key came before it.
	Delay func(key string, n int) time.Duration
	// Labels go on the configuration.
	Labels map[string]string
}

// delayState is a delayer's: its spec, and the requests per key so far.
type delayState struct {
	d      Delayer
	mu     sync.Mutex
	counts map[string]int
	// delayed and total are how many requests it delayed and for how long;
	// probes, how many dry runs reached it.
	delayed int
	total   time.Duration
	probes  int
	// abandoned counts the requests the API server stopped waiting for
	// while they were delayed, past its webhook timeout: they failed for
	// the delay, and the run says so.
	abandoned int
}

// delayAbandoned records that the API server stopped waiting for a request
// the delayer at path was delaying.
func (s *Server) delayAbandoned(path string) {
	s.mu.Lock()
	st := s.delays[path]
	s.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	st.abandoned++
	st.mu.Unlock()
}

// DelayerProbed reports whether the API server has called the delayer of
// a name for a dry run: its configuration is in force.
func (s *Server) DelayerProbed(name string) bool {
	s.mu.Lock()
	st := s.delays[delayPath(name)]
	s.mu.Unlock()
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.probes > 0
}

// RegisterDelayer serves d and returns its configuration for the caller
// to create: every create, update and delete of any resource (subresources
// included) in its namespace but Events.
func (s *Server) RegisterDelayer(d Delayer) *admissionregistrationv1.ValidatingWebhookConfiguration {
	p := delayPath(d.Name)
	s.mu.Lock()
	if s.delays == nil {
		s.delays = map[string]*delayState{}
	}
	s.delays[p] = &delayState{d: d, counts: map[string]int{}}
	s.mu.Unlock()
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Labels: d.Labels},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "delay.gate.trainersim.dev",
			ClientConfig: s.ep.ClientConfig(p),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": d.Namespace}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			TimeoutSeconds:          ptr.To(int32(delayTimeout / time.Second)),
		}},
	}
}

// UnregisterDelayer stops serving the delayer of a name and returns how
// many requests it delayed, for how long in all, and how many of them the
// API server stopped waiting for (they failed).
func (s *Server) UnregisterDelayer(name string) (int, time.Duration, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.delays[delayPath(name)]
	if st == nil {
		return 0, 0, 0
	}
	delete(s.delays, delayPath(name))
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.delayed, st.total, st.abandoned
}

func delayPath(name string) string { return "/delay/" + name }

// delay returns how long the delayer at path holds req; zero for one it
// does not delay (a dry run, an Event).
func (s *Server) delay(path string, req *admissionv1.AdmissionRequest) (time.Duration, bool) {
	s.mu.Lock()
	st := s.delays[path]
	s.mu.Unlock()
	if st == nil {
		return 0, false
	}
	if req.DryRun != nil && *req.DryRun {
		st.mu.Lock()
		st.probes++
		st.mu.Unlock()
		return 0, true
	}
	if req.Resource.Resource == "events" {
		return 0, true
	}
	key := RequestKey(req)
	st.mu.Lock()
	n := st.counts[key]
	st.counts[key]++
	st.mu.Unlock()
	d := st.d.Delay(key, n)
	st.mu.Lock()
	st.delayed++
	st.total += d
	st.mu.Unlock()
	return d, true
}

// RequestKey names a request for a delay: who sent it (user and field
// manager), its verb, resource and object. Two runs of a scenario send
// requests of the same keys, whatever their order.
func RequestKey(req *admissionv1.AdmissionRequest) string {
	resource := req.Resource.Resource
	if req.SubResource != "" {
		resource += "/" + req.SubResource
	}
	name := req.Name
	if name == "" {
		name = "(generated)"
	}
	return req.UserInfo.Username + " " + fieldManager(req) + " " + Verb(req) + " " + resource + " " + name
}
