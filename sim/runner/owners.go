package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
)

// trainJobList is the list kind of TrainJobs, read as unstructured objects
// so that managedFields and runtimePatches come back as the server has them.
var trainJobList = schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJobList"}

// ownersTimeout bounds the read of owners after a step.
const ownersTimeout = 10 * time.Second

// checkOwner checks one owners expectation against the object's
// managedFields.
func (s *scenarioRun) checkOwner(ctx context.Context, want *v1alpha1.OwnerExpectation, cached bool) (string, string) {
	path, err := fieldpath.Parse(want.Field)
	if err != nil {
		return err.Error(), ""
	}
	t := want.Target
	obj, err := s.read(ctx, t, cached)
	if err != nil {
		return fmt.Sprintf("failed to get %s %s: %v", t.Kind, t.Name, err), ""
	}
	got, err := fieldpath.Owners(obj.GetManagedFields(), path)
	if err != nil {
		return fmt.Sprintf("%s %s: %v", t.Kind, t.Name, err), ""
	}
	wanted := []string{want.Manager}
	if !want.Only {
		// Other owners are allowed: the diff shows only a missing manager.
		wanted = append(slices.Clone(got), want.Manager)
		slices.Sort(wanted)
		wanted = slices.Compact(wanted)
	}
	if gocmp.Equal(wanted, got) {
		return "", ""
	}
	what := want.Manager
	if want.Only {
		what = "only " + want.Manager
	}
	return fmt.Sprintf("field %s of %s %s is owned by %v, want %s", want.Field, t.Kind, t.Name, got, what),
		fmt.Sprintf("owners of %s mismatch (-want +got):\n%s", want.Field, gocmp.Diff(wanted, got))
}

// entryOwners reads who owns each runtimePatches entry of every TrainJob in
// the scenario's namespace, for the report. It returns nil when the read
// fails: the report is a record, not an expectation.
func (s *scenarioRun) entryOwners(ctx context.Context) []results.EntryOwners {
	ctx, cancel := context.WithTimeout(ctx, ownersTimeout)
	defer cancel()
	items, err := s.listTrainJobs(ctx, s.fresh(ctx))
	if err != nil {
		return nil
	}
	return ownersOf(items)
}

// finalTrainJobs reads, in one list, who owns each runtimePatches entry
// (entryOwners) and what state each TrainJob of the namespace is in; nil
// when the read fails.
func (s *scenarioRun) finalTrainJobs(ctx context.Context) ([]results.EntryOwners, []results.TrainJobState) {
	listCtx, cancel := context.WithTimeout(ctx, ownersTimeout)
	defer cancel()
	items, err := s.listTrainJobs(listCtx, s.fresh(listCtx))
	if err != nil {
		return nil, nil
	}
	var states []results.TrainJobState
	for i := range items {
		tj := &items[i]
		st := results.TrainJobState{Name: tj.GetName()}
		st.Suspended, _, _ = unstructured.NestedBool(tj.Object, "spec", "suspend")
		conds, _, _ := unstructured.NestedSlice(tj.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			st.Conditions = append(st.Conditions, strings.TrimSpace(fmt.Sprintf("%v=%v %v", m["type"], m["status"], m["reason"])))
		}
		slices.Sort(st.Conditions)
		if s.runner.CheckJobSets {
			// Not bounded by the list's timeout: each check waits
			// jobSetCatchUp at most.
			s.checkJobSet(ctx, tj, &st)
		}
		states = append(states, st)
	}
	return ownersOf(items), states
}

// ownersOf returns who owns each runtimePatches entry of TrainJobs.
func ownersOf(items []unstructured.Unstructured) []results.EntryOwners {
	var out []results.EntryOwners
	for i := range items {
		tj := &items[i]
		patches, _, _ := unstructured.NestedSlice(tj.Object, "spec", "runtimePatches")
		for _, p := range patches {
			entry, _ := p.(map[string]any)
			manager, _ := entry["manager"].(string)
			if manager == "" {
				continue
			}
			path := fieldpath.Path{fieldpath.Field("spec"), fieldpath.Field("runtimePatches"), fieldpath.Item("manager", manager)}
			managers, err := fieldpath.Owners(tj.GetManagedFields(), path)
			if err != nil {
				continue
			}
			out = append(out, results.EntryOwners{TrainJob: tj.GetName(), Entry: manager, Managers: managers})
		}
	}
	return out
}

// tookTrainJobWrite reports whether a write went to a TrainJob since it was
// last asked (only such a write can change who owns an entry), and forgets
// it.
func (s *scenarioRun) tookTrainJobWrite() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	written := s.trainJobWritten
	s.trainJobWritten = false
	return written
}
