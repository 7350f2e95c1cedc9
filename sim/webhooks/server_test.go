package webhooks

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestManagerWebhookMutate: the webhook adds its entry, leaves the TrainJob
// alone when its entry is there as it writes it (numbers decoded from YAML
// and from JSON compare equal), and replaces a different entry of its own,
// keeping the Trainer's time stamp.
func TestManagerWebhookMutate(t *testing.T) {
	entry := map[string]any{"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{
		map[string]any{"name": "node", "template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"terminationGracePeriodSeconds": int64(120)}}}}},
	}}}}
	w := &Webhook{Name: "platform", Manager: "platform.example.com/defaults", Entry: entry}
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
