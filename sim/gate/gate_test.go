package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trainersim/trainersim/sim/fieldpath"
)

const kueue = "system:serviceaccount:kueue-system:kueue-controller-manager"

// review is an AdmissionReview of a TrainJob write.
func review(user, verb, name string, old, new map[string]any) *admissionv1.AdmissionReview {
	op, opts := admissionv1.Update, "UpdateOptions"
	switch verb {
	case "create":
		op, opts = admissionv1.Create, "CreateOptions"
	case "patch":
		opts = "PatchOptions"
	}
	raw := func(v map[string]any) runtime.RawExtension {
		if v == nil {
			return runtime.RawExtension{}
		}
		b, _ := json.Marshal(v)
		return runtime.RawExtension{Raw: b}
	}
	optsRaw, _ := json.Marshal(map[string]any{"kind": opts, "apiVersion": "meta.k8s.io/v1"})
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(name + "-" + verb),
			Kind:      metav1.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"},
			Resource:  metav1.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"},
			Name:      name,
			Operation: op,
			UserInfo:  authenticationv1.UserInfo{Username: user},
			Object:    raw(new), OldObject: raw(old),
			Options: runtime.RawExtension{Raw: optsRaw},
		},
	}
}

func suspended(v bool) map[string]any { return map[string]any{"spec": map[string]any{"suspend": v}} }

// send posts r to the gate's path and returns whether it was answered
// (allowed) before ctx ended.
func send(ctx context.Context, t *testing.T, url string, r *admissionv1.AdmissionReview) bool {
	body, _ := json.Marshal(r)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+gatePath("g"), bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	out := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Errorf("answer: %v", err)
		return false
	}
	return out.Response.Allowed
}

// TestGate: a gate holds the requests it matches (Kueue's unsuspend of a
// TrainJob) and answers the others at once; release one answers the oldest
// and keeps holding, release answers the rest and opens it; a request the
// caller stops waiting for is recorded as abandoned.
func TestGate(t *testing.T) {
	s := newState()
	held := make(chan struct{}, 10)
	cfg := s.Register(Gate{
		Name: "g", Namespace: "ns", Users: []string{kueue}, Verb: "patch", Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs",
		ObjectName: "llm", Change: &Change{Path: fieldpath.Path{fieldpath.Field("spec"), fieldpath.Field("suspend")}, From: true, To: false},
		OnHold: func() { held <- struct{}{} },
	})
	if got := *cfg.Webhooks[0].TimeoutSeconds; got != 30 {
		t.Errorf("timeout %d s, want 30 (the longest hold)", got)
	}
	if got := cfg.Webhooks[0].Rules[0].Operations; len(got) != 1 || got[0] != "UPDATE" {
		t.Errorf("operations %v, want UPDATE for a patch", got)
	}
	srv := httptest.NewServer(Admission(s.answer))
	defer srv.Close()
	ctx := context.Background()

	// Not held: another user, another verb, another object, no such change.
	for name, r := range map[string]*admissionv1.AdmissionReview{
		"the user's patch":      review("alice", "patch", "llm", suspended(true), suspended(false)),
		"Kueue's create":        review(kueue, "create", "llm", nil, suspended(false)),
		"another TrainJob":      review(kueue, "patch", "other", suspended(true), suspended(false)),
		"a patch that suspends": review(kueue, "patch", "llm", suspended(false), suspended(true)),
	} {
		if !send(ctx, t, srv.URL, r) {
			t.Errorf("%s was not let through", name)
		}
	}

	// An update and a patch are one to admission: both are held.
	answered := make(chan int, 3)
	for i, verb := range []string{"update", "patch"} {
		go func() {
			if send(ctx, t, srv.URL, review(kueue, verb, "llm", suspended(true), suspended(false))) {
				answered <- i
			}
		}()
		<-held
	}
	if got := len(s.Holding("g")); got != 2 {
		t.Fatalf("holding %d, want 2", got)
	}
	if n := s.Release("g", "first", true); n != 1 {
		t.Errorf("release one answered %d", n)
	}
	<-answered
	if got := len(s.Holding("g")); got != 1 || s.Open("g") {
		t.Errorf("after release one: holding %d, open %v; want 1, closed", got, s.Open("g"))
	}
	if n := s.Release("g", "step ran", false); n != 1 {
		t.Errorf("release answered %d, want the one left", n)
	}
	<-answered
	if !s.Open("g") || !send(ctx, t, srv.URL, review(kueue, "patch", "llm", suspended(true), suspended(false))) {
		t.Error("an open gate held a request")
	}
	var releases []string
	for _, r := range s.Requests("g") {
		releases = append(releases, r.Released)
	}
	if diff := cmp.Diff([]string{"first", "step ran"}, releases); diff != "" {
		t.Errorf("releases mismatch (-want +got):\n%s", diff)
	}
}

// TestGateAbandoned: a request whose caller gives up is never answered and
// is recorded as abandoned; the gate goes on holding the next ones.
func TestGateAbandoned(t *testing.T) {
	s := newState()
	s.Register(Gate{Name: "g", Namespace: "ns", Resource: "trainjobs", Change: &Change{Entry: "kueue.x-k8s.io/manager"}})
	srv := httptest.NewServer(Admission(s.answer))
	defer srv.Close()
	entry := map[string]any{"spec": map[string]any{"runtimePatches": []any{map[string]any{"manager": "kueue.x-k8s.io/manager"}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if send(ctx, t, srv.URL, review("anybody", "update", "llm", map[string]any{}, entry)) {
		t.Fatal("a request adding the entry was let through")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(s.Holding("g")) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	reqs := s.Requests("g")
	if len(reqs) != 1 || reqs[0].Released != Abandoned || len(s.Holding("g")) != 0 {
		t.Errorf("requests %+v, holding %d: want one abandoned, none held", reqs, len(s.Holding("g")))
	}
	if s.Open("g") {
		t.Error("an abandoned request opened the gate")
	}
	if !send(context.Background(), t, srv.URL, review("anybody", "update", "llm", entry, entry)) {
		t.Error("an update that keeps the entry was held")
	}
}

// TestVerb: a patch reaches admission as an update, and a gate of either
// verb holds both.
func TestVerb(t *testing.T) {
	for verb, want := range map[string]string{"create": "create", "update": "update", "patch": "update"} {
		if got := Verb(review("u", verb, "x", nil, nil).Request); got != want {
			t.Errorf("Verb of a %s = %q, want %q", verb, got, want)
		}
	}
	if !sameVerb("patch", "update") || !sameVerb("update", "update") || sameVerb("create", "update") {
		t.Error("a gate of patch or update must hold both, and nothing else")
	}
}

// TestChangeMade: a change names a field by keys and list items; an omitted
// from or to is any other value, absent included, and a request that leaves
// the field as it was makes no change.
func TestChangeMade(t *testing.T) {
	active, err := fieldpath.Parse("status.jobsStatus[name=node].active")
	if err != nil {
		t.Fatal(err)
	}
	jobs := func(active ...int) string {
		if len(active) == 0 {
			return `{"status":{}}`
		}
		return fmt.Sprintf(`{"status":{"jobsStatus":[{"name":"init","active":0},{"name":"node","active":%d}]}}`, active[0])
	}
	for _, tc := range []struct {
		name     string
		change   Change
		old, new string
		want     bool
	}{
		{"0 to 1, both named", Change{Path: active, From: int64(0), To: int64(1)}, jobs(0), jobs(1), true},
		{"to 1 from anything: from 0", Change{Path: active, To: int64(1)}, jobs(0), jobs(1), true},
		{"to 1 from anything: from absent", Change{Path: active, To: int64(1)}, jobs(), jobs(1), true},
		{"to 1 from anything: already 1", Change{Path: active, To: int64(1)}, jobs(1), jobs(1), false},
		{"from 1 to anything: to absent", Change{Path: active, From: int64(1)}, jobs(1), jobs(), true},
		{"0 to 1, but 1 to 2", Change{Path: active, From: int64(0), To: int64(1)}, jobs(1), jobs(2), false},
	} {
		if got := tc.change.made([]byte(tc.old), []byte(tc.new)); got != tc.want {
			t.Errorf("%s: made %s -> %s = %v, want %v", tc.name, tc.old, tc.new, got, tc.want)
		}
	}
}

// TestDelayAbandoned: a delayed request whose caller goes away before its
// delay ends (a crashed component's) is not the delay's failure; one the
// API server stops waiting for past the webhook's timeout is.
func TestDelayAbandoned(t *testing.T) {
	for _, tc := range []struct {
		name      string
		delay     time.Duration
		abandoned int
	}{
		{"the caller went away", time.Second, 0},
		{"past the webhook's timeout", delayTimeout, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newState()
			s.RegisterDelayer(Delayer{Name: "d", Namespace: "ns", Delay: func(string, int) time.Duration { return tc.delay }})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			r := review(kueue, "patch", "llm", suspended(true), suspended(false))
			if resp := s.answer(ctx, delayPath("d"), r.Request); resp != nil {
				t.Fatalf("answer = %+v, want none: the caller stopped waiting", resp)
			}
			if _, _, abandoned := s.UnregisterDelayer("d"); abandoned != tc.abandoned {
				t.Errorf("abandoned = %d, want %d", abandoned, tc.abandoned)
			}
		})
	}
}

// TestWaitUnheld: WaitUnheld waits while a gate holds a request of the
// users given (another user's held request does not count), and returns
// once the caller of that request has stopped waiting for it: a crashed
// component's connection gone.
func TestWaitUnheld(t *testing.T) {
	s := newState()
	s.Register(Gate{Name: "g", Namespace: "ns", Resource: "trainjobs", Change: &Change{Path: fieldpath.Path{{Kind: fieldpath.FieldKind, Name: "spec"}, {Kind: fieldpath.FieldKind, Name: "suspend"}}, To: false}})
	srv := httptest.NewServer(Admission(s.answer))
	defer srv.Close()
	crashed, cut := context.WithCancel(context.Background())
	other, release := context.WithCancel(context.Background())
	defer release()
	go send(crashed, t, srv.URL, review("kueue", "update", "llm", suspended(true), suspended(false)))
	go send(other, t, srv.URL, review("someone", "update", "llm", suspended(true), suspended(false)))
	for len(s.Holding("g")) < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	left, err := s.WaitUnheld(ctx, []string{"g"}, []string{"kueue"})
	if err == nil || len(left) != 1 || left[0].User != "kueue" {
		t.Fatalf("while kueue's request is held: %v, %+v; want it left, and the wait's deadline", err, left)
	}
	cut()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if left, err := s.WaitUnheld(ctx, []string{"g"}, []string{"kueue"}); err != nil {
		t.Errorf("after kueue's request was cut: %v, still held %+v", err, left)
	}
	if n := len(s.Holding("g")); n != 1 {
		t.Errorf("the gate holds %d requests, want the other user's", n)
	}
}
