package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// TestManagerWebhookMutate: the webhook adds its entry, leaves the TrainJob
// alone when its entry is there as it writes it (numbers decoded from YAML
// and from JSON compare equal), and replaces a different entry of its own,
// keeping the Trainer's time stamp.
func TestManagerWebhookMutate(t *testing.T) {
	entry := map[string]any{"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{
		map[string]any{"name": "node", "template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"terminationGracePeriodSeconds": int64(120)}}}}},
	}}}}
	w := &ManagerWebhook{Name: "platform", Manager: "platform.example.com/defaults", Entry: entry}
	request := func(spec string) *admissionv1.AdmissionRequest {
		raw := `{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j"},"spec":` + spec + `}`
		return &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)}}
	}
	own, _ := json.Marshal(map[string]any{"manager": w.Manager, "time": "2026-11-24T10:00:00Z", "trainingRuntimeSpec": entry})

	call, patch, err := w.mutate(request(`{"runtimePatches":[{"manager":"sdk"}]}`))
	if err != nil || !call.Added || !call.Changed {
		t.Fatalf("no entry: call %+v, err %v; want it added", call, err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(patch, &ops); err != nil || len(ops) != 1 || ops[0]["op"] != "replace" || len(ops[0]["value"].([]any)) != 2 {
		t.Errorf("no entry: patch %s, want the list with the SDK's and its entry", patch)
	}

	call, patch, err = w.mutate(request(`{"runtimePatches":[` + string(own) + `]}`))
	if err != nil || call.Changed || patch != nil {
		t.Errorf("its entry as it writes it: call %+v, patch %s, err %v; want no change", call, patch, err)
	}

	changed := `{"manager":"platform.example.com/defaults","time":"2026-11-24T10:00:00Z","trainingRuntimeSpec":{}}`
	call, patch, err = w.mutate(request(`{"runtimePatches":[` + changed + `]}`))
	if err != nil || call.Added || !call.Changed {
		t.Fatalf("a different entry: call %+v, err %v; want it replaced", call, err)
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	got := ops[0]["value"].([]any)[0].(map[string]any)
	if got["time"] != "2026-11-24T10:00:00Z" || got["trainingRuntimeSpec"] == nil {
		t.Errorf("a different entry: replaced by %v, want its entry with the old time", got)
	}

	call, patch, err = w.mutate(request(`{}`))
	if err != nil || !call.Added {
		t.Fatalf("no list: call %+v, err %v", call, err)
	}
	if err := json.Unmarshal(patch, &ops); err != nil || ops[0]["op"] != "add" {
		t.Errorf("no list: patch %s, want an add of the list", patch)
	}
}

// TestWebhookHold: a webhook with a hold answers an unsuspend only once it
// is released, and lets every other request through at once; once
// released it holds nothing; a request whose caller stops waiting ends
// the hold of that request, and the call says so.
func TestWebhookHold(t *testing.T) {
	s := newWebhookState("127.0.0.1", 9443, nil)
	held := make(chan struct{}, 4)
	w := ManagerWebhook{Name: "gate", Namespace: "ns", Operations: []string{"UPDATE"}, Hold: v1alpha1.HoldUnsuspend, OnHold: func() { held <- struct{}{} }}
	cfg := s.Register(w).Webhooks[0]
	// The API server waits up to 30 s for it, and calls it on CREATE too,
	// for the readiness probe.
	if *cfg.TimeoutSeconds != 30 || !slices.Equal(cfg.Rules[0].Operations, []admissionregistrationv1.OperationType{"UPDATE", "CREATE"}) {
		t.Errorf("configuration: timeout %d, operations %v; want 30 s, UPDATE and CREATE", *cfg.TimeoutSeconds, cfg.Rules[0].Operations)
	}
	job := func(suspend bool) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j"},"spec":{"suspend":%t}}`, suspend))}
	}
	// send answers the response, nil when none was written.
	send := func(ctx context.Context, w ManagerWebhook, op admissionv1.Operation, old, obj runtime.RawExtension) <-chan *admissionv1.AdmissionResponse {
		out := make(chan *admissionv1.AdmissionResponse, 1)
		body, _ := json.Marshal(&admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{UID: "u", Operation: op, OldObject: old, Object: obj}})
		go func() {
			rec := httptest.NewRecorder()
			s.serve(rec, httptest.NewRequestWithContext(ctx, http.MethodPost, webhookPath(&w), bytes.NewReader(body)))
			if rec.Body.Len() == 0 {
				out <- nil
				return
			}
			review := &admissionv1.AdmissionReview{}
			_ = json.Unmarshal(rec.Body.Bytes(), review)
			out <- review.Response
		}()
		return out
	}
	answered := func(what string, ch <-chan *admissionv1.AdmissionResponse) {
		t.Helper()
		select {
		case r := <-ch:
			if r == nil || !r.Allowed || r.Patch != nil {
				t.Errorf("%s: answer %+v, want allowed without a change", what, r)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: not answered", what)
		}
	}

	waitHeld := func() {
		t.Helper()
		select {
		case <-held:
		case <-time.After(5 * time.Second):
			t.Fatal("the unsuspend was not held")
		}
	}
	unsuspend := send(context.Background(), w, admissionv1.Update, job(true), job(false))
	waitHeld()
	if n := s.Holding(w); n != 1 {
		t.Errorf("holding %d, want 1", n)
	}
	answered("a label change while it holds", send(context.Background(), w, admissionv1.Update, job(true), job(true)))
	select {
	case r := <-unsuspend:
		t.Fatalf("the unsuspend was answered before the release: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	s.Release(w, "step x ran")
	answered("the held unsuspend", unsuspend)
	answered("an unsuspend after the release", send(context.Background(), w, admissionv1.Update, job(true), job(false)))

	calls := s.Calls(w)
	if len(calls) != 3 || !calls[0].Held || calls[0].Released != "step x ran" || calls[0].HeldFor < 100*time.Millisecond || calls[1].Held || calls[2].Held {
		t.Errorf("calls %+v: want the first held until step x ran, the others not", calls)
	}

	// A second webhook whose caller stops waiting: no answer, and the
	// hold goes on for the next request, which the end of the scenario
	// (Unregister) answers.
	w2 := w
	w2.Name = "gate2"
	s.Register(w2)
	ctx, cancel := context.WithCancel(context.Background())
	gone := send(ctx, w2, admissionv1.Update, job(true), job(false))
	waitHeld()
	cancel()
	if r := <-gone; r != nil {
		t.Errorf("a request its caller stopped waiting for was answered: %+v", r)
	}
	if calls := s.Calls(w2); len(calls) != 1 || calls[0].Released != HoldAbandoned || s.Holding(w2) != 0 {
		t.Errorf("calls %+v, holding %d: want the call ended by the caller, none held", calls, s.Holding(w2))
	}
	next := send(context.Background(), w2, admissionv1.Update, job(true), job(false))
	waitHeld()
	s.Unregister(w2)
	answered("an unsuspend held when the scenario ends", next)
}
