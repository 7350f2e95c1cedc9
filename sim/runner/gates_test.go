package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
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
