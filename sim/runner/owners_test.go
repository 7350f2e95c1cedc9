package runner

import (
	"testing"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

func TestWritesTrainJob(t *testing.T) {
	sel := &v1alpha1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	trainJobs := selectorTarget(&v1alpha1.Target{Kind: "TrainJob", Selector: sel}, "ns")
	jobSets := selectorTarget(&v1alpha1.Target{Kind: "JobSet", Selector: sel}, "ns")
	for _, tc := range []struct {
		name   string
		writes []results.Write
		want   bool
	}{
		{"an apply to a TrainJob", []results.Write{{Verb: "apply", Target: "TrainJob ns/llm"}}, true},
		{"a patch of the TrainJobs a selector matches", []results.Write{{Verb: "patch", Target: trainJobs}}, true},
		{"a get is no write", []results.Write{{Verb: "get", Target: "TrainJob ns/llm"}}, false},
		{"a write to another kind", []results.Write{{Verb: "patch", Target: jobSets}}, false},
		{"one of a group", []results.Write{{Verb: "patch", Target: "Pod ns/p"}, {Verb: "update", Target: "TrainJob ns/llm"}}, true},
		{"no write", nil, false},
	} {
		if got := writesTrainJob(tc.writes); got != tc.want {
			t.Errorf("%s: writesTrainJob = %v, want %v", tc.name, got, tc.want)
		}
	}
}
