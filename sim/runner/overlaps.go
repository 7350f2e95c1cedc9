package runner

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/explain"
)

// checkStrict is spec.strict: it fails when a TrainJob of the scenario's
// namespace has two runtimePatches entries that set the same field.
func (s *scenarioRun) checkStrict(ctx context.Context) string {
	var list trainer.TrainJobList
	if err := s.cluster.Client().List(ctx, &list, client.InNamespace(s.ns)); err != nil {
		return fmt.Sprintf("strict: failed to list TrainJobs: %v", err)
	}
	var lines []string
	for i := range list.Items {
		msg, err := overlapProblem(&list.Items[i])
		if err != nil {
			return "strict: " + err.Error()
		}
		if msg != "" {
			lines = append(lines, "strict: "+msg)
		}
	}
	return strings.Join(lines, "\n")
}

// checkNoOverlaps is expect.noOverlaps.
func (s *scenarioRun) checkNoOverlaps(ctx context.Context, name string, cached bool) string {
	obj, err := s.read(ctx, v1alpha1.Target{Kind: "TrainJob", Name: name}, cached)
	if err != nil {
		return fmt.Sprintf("noOverlaps: failed to get TrainJob %s: %v", name, err)
	}
	tj := &trainer.TrainJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, tj); err != nil {
		return fmt.Sprintf("noOverlaps: TrainJob %s: %v", name, err)
	}
	msg, err := overlapProblem(tj)
	if err != nil {
		return "noOverlaps: " + err.Error()
	}
	if msg != "" {
		return "noOverlaps: " + msg
	}
	return ""
}

// overlapProblem describes the overlaps of a TrainJob's entries, the first
// one on the first line; "" when there are none.
func overlapProblem(tj *trainer.TrainJob) (string, error) {
	overlaps, err := explain.Overlaps(tj)
	if err != nil {
		return "", fmt.Errorf("failed to compute the overlaps of TrainJob %s: %w", tj.Name, err)
	}
	if len(overlaps) == 0 {
		return "", nil
	}
	lines := []string{fmt.Sprintf("TrainJob %s: two runtimePatches entries set the same field: %s", tj.Name, overlaps[0])}
	for _, o := range overlaps[1:] {
		lines = append(lines, "  and "+o.String())
	}
	return strings.Join(lines, "\n"), nil
}
