package runner

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

func TestCheckOutcome(t *testing.T) {
	gr := schema.GroupResource{Group: "trainer.kubeflow.org", Resource: "trainjobs"}
	conflict := apierrors.NewConflict(gr, "llm", errors.New(`Apply failed with 1 conflict: conflict with "kueue-admission": .spec.suspend`))
	forbidden := apierrors.NewForbidden(gr, "llm", errors.New("RuntimePatches can only be modified when the TrainJob is suspended before or after the update"))
	for _, tc := range []struct {
		name     string
		status   int
		reason   string
		message  string
		writeErr error
		want     *v1alpha1.ExpectError
		wantErr  string
	}{
		{name: "success without expectation", status: 200},
		{name: "refused without expectation fails with the server's message", status: 403, reason: "Forbidden", message: "denied", writeErr: forbidden, wantErr: "was refused: HTTP 403 Forbidden: denied"},
		{name: "success when an error was expected", status: 200, want: &v1alpha1.ExpectError{Status: 403}, wantErr: "succeeded (HTTP 200), but an error was expected"},
		{name: "matching status and message", status: 403, reason: "Forbidden", message: "RuntimePatches can only be modified", writeErr: forbidden,
			want: &v1alpha1.ExpectError{Status: 403, Reason: "Forbidden", MessageContains: "can only be modified", MessageMatches: `^RuntimePatches .* modified$`}},
		{name: "wrong status", status: 409, reason: "Conflict", message: "x", writeErr: conflict, want: &v1alpha1.ExpectError{Status: 403}, wantErr: "status 409, want 403"},
		{name: "conflict names the manager", status: 409, reason: "Conflict", message: `Apply failed with 1 conflict: conflict with "kueue-admission": .spec.suspend`, writeErr: conflict,
			want: &v1alpha1.ExpectError{Status: 409, ConflictManager: "kueue-admission"}},
		{name: "conflict names another manager", status: 409, reason: "Conflict", message: `conflict with "kueue-admission"`, writeErr: conflict,
			want: &v1alpha1.ExpectError{ConflictManager: "kubeflow-sdk"}, wantErr: `does not name a conflict with "kubeflow-sdk"`},
		{name: "regexp does not match", status: 403, message: "denied", writeErr: forbidden, want: &v1alpha1.ExpectError{MessageMatches: "^allowed"}, wantErr: `does not match "^allowed"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &results.Write{Verb: "apply", Target: "TrainJob ns/llm", FieldManager: "m", Status: tc.status, Reason: tc.reason, Message: tc.message}
			err := checkOutcome(w, tc.writeErr, tc.want)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !w.Expected {
					t.Error("write not marked Expected")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if w.Expected {
				t.Error("write marked Expected despite the mismatch")
			}
		})
	}
}
