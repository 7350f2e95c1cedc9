package runner

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// TestTookTrainJobWrite: only a write sent to a TrainJob (one, or those a
// selector matches) can change who owns an entry; asking forgets it.
func TestTookTrainJobWrite(t *testing.T) {
	sel := &v1alpha1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	trainJobs := selectorTarget(&v1alpha1.Target{Kind: "TrainJob", Selector: sel}, "ns")
	jobSets := selectorTarget(&v1alpha1.Target{Kind: "JobSet", Selector: sel}, "ns")
	llm := writeTarget{kind: "TrainJob", namespace: "ns", name: "llm"}
	write := func(verb string, target writeTarget) *prepared {
		v, _ := v1alpha1.LookupVerb(verb)
		return &prepared{verb: v, target: target, do: func(context.Context) (*unstructured.Unstructured, error) { return nil, nil }}
	}
	for _, tc := range []struct {
		name   string
		writes []*prepared
		want   bool
	}{
		{"an apply to a TrainJob", []*prepared{write("apply", llm)}, true},
		{"a patch of the TrainJobs a selector matches", []*prepared{write("patch", trainJobs)}, true},
		{"a get is no write", []*prepared{write("get", llm)}, false},
		{"a write to another kind", []*prepared{write("patch", jobSets)}, false},
		{"one of a group", []*prepared{write("patch", writeTarget{kind: "Pod", namespace: "ns", name: "p"}), write("update", llm)}, true},
		{"no write", nil, false},
	} {
		s := &scenarioRun{clock: clock.RealClock{}, objects: map[string]map[string]any{}, written: map[string]uint64{}}
		for _, p := range tc.writes {
			if err := s.send(context.Background(), p, "step"); err != nil {
				t.Fatal(err)
			}
		}
		if got := s.tookTrainJobWrite(); got != tc.want {
			t.Errorf("%s: tookTrainJobWrite = %v, want %v", tc.name, got, tc.want)
		}
		if s.tookTrainJobWrite() {
			t.Errorf("%s: a second ask still says a TrainJob was written", tc.name)
		}
	}
}
