package runner

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
	"github.com/trainersim/trainersim/sim/gate"
)

// TestHoldGates: a scenario webhook's hold of unsuspends is a gate of
// anybody's TrainJob update that turns spec.suspend from true to false,
// open after the hold's step, on the webhook's lane; a webhook without a
// hold has none. The gate built from it holds Kueue's unsuspend and lets a
// label change through.
func TestHoldGates(t *testing.T) {
	s := &scenarioRun{sc: &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{Webhooks: []v1alpha1.AdmissionWebhook{
		{Name: "platform-policy", Hold: &v1alpha1.WebhookHold{Requests: v1alpha1.HoldUnsuspend, Until: "the user labels it"}},
		{Name: "team-labels", Manager: "example.com/labels"},
	}}}}
	specs, lanes := s.holdGates()
	want := []v1alpha1.Gate{{
		Name: "platform-policy-hold", Verb: "update", Resource: "trainjobs",
		Change: &v1alpha1.GateChange{Field: "spec.suspend", From: true, To: false},
		Until:  "the user labels it",
	}}
	if diff := cmp.Diff(want, specs); diff != "" {
		t.Errorf("holdGates (-want +got):\n%s", diff)
	}
	if !cmp.Equal(lanes, []string{"platform-policy"}) {
		t.Errorf("lanes %v, want the webhook's", lanes)
	}

	path, err := fieldpath.Parse(specs[0].Change.Field)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate.Gate{Verb: specs[0].Verb, Change: &gate.Change{Path: path, From: specs[0].Change.From, To: specs[0].Change.To}}
	job := func(suspend bool, label string) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"l":"` + label + `"}},"spec":{"suspend":` + map[bool]string{true: "true", false: "false"}[suspend] + `}}`)}
	}
	update := func(old, obj runtime.RawExtension) *admissionv1.AdmissionRequest {
		return &admissionv1.AdmissionRequest{Operation: admissionv1.Update, OldObject: old, Object: obj,
			UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kueue-system:kueue-controller-manager"}}
	}
	if !gate.Matches(g, update(job(true, "a"), job(false, "a"))) {
		t.Error("Kueue's unsuspend is not held")
	}
	if gate.Matches(g, update(job(true, "a"), job(true, "b"))) {
		t.Error("a label change is held")
	}
}

// TestAbandonedHolds: a run names the gate of each request a gate held
// until its caller stopped waiting (the API server after 30 s), and not one
// whose request was released; the requests go through the gate server over
// TLS, as the API server sends them.
func TestAbandonedHolds(t *testing.T) {
	dir := t.TempDir()
	ca, err := gate.WriteServingCert(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	server, err := gate.NewServer("127.0.0.1", dir, ca)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	apiServer := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	s := &scenarioRun{gateServer: server}
	urls := map[string]string{}
	for _, name := range []string{"explore-flip", "released"} {
		g := gate.Gate{Name: name + "-ns", Namespace: "ns", Verb: "update", Resource: "trainjobs"}
		urls[name] = *server.Register(g).Webhooks[0].ClientConfig.URL
		s.gates, s.gateSpecs = append(s.gates, g), append(s.gateSpecs, v1alpha1.Gate{Name: name})
	}
	send := func(ctx context.Context, url string) error {
		body, _ := json.Marshal(&admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: "u", Name: "llm", Namespace: "ns", Operation: admissionv1.Update,
				Kind:     metav1.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"},
				Resource: metav1.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"},
				Object:   runtime.RawExtension{Raw: []byte(`{"spec":{"suspend":false}}`)}, OldObject: runtime.RawExtension{Raw: []byte(`{"spec":{"suspend":true}}`)},
				UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kueue-system:kueue-controller-manager"},
			},
		})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		resp, err := apiServer.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := send(ctx, urls["explore-flip"]); err == nil {
		t.Fatal("a held request was answered")
	}
	released := make(chan error, 1)
	go func() { released <- send(t.Context(), urls["released"]) }()
	// The abandoned request let go, the other one held: only then is the
	// second released (released before it came, it would wait forever).
	deadline := time.Now().Add(10 * time.Second)
	for len(server.Holding("explore-flip-ns")) > 0 || len(server.Holding("released-ns")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s the gate server holds %d abandoned and %d waiting requests, want 0 and 1", len(server.Holding("explore-flip-ns")), len(server.Holding("released-ns")))
		}
		time.Sleep(10 * time.Millisecond)
	}
	server.Release("released-ns", "its step ended", false)
	if err := <-released; err != nil {
		t.Fatalf("a released request: %v", err)
	}
	if got := s.abandonedHolds(); !cmp.Equal(got, []string{"explore-flip"}) {
		t.Errorf("abandoned holds %v, want the gate whose request its caller stopped waiting for", got)
	}
}
