package trainerruntime

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	jobruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
)

// stub is a runtime whose NewObjects returns fixed objects or an error and
// renames the TrainJob it is given, as a runtime could.
type stub struct {
	jobruntime.Runtime
	objs []apiruntime.ApplyConfiguration
	err  error
}

func (s *stub) NewObjects(_ context.Context, tj *trainer.TrainJob) ([]apiruntime.ApplyConfiguration, error) {
	tj.Name = "changed-by-the-runtime"
	return s.objs, s.err
}

func TestObservePassesThroughAndReports(t *testing.T) {
	cm := corev1ac.ConfigMap("x", "ns")
	failing := errors.New("no runtime")
	runtimes := map[string]jobruntime.Runtime{
		"ok":   &stub{objs: []apiruntime.ApplyConfiguration{cm}},
		"fail": &stub{err: failing},
	}
	var got []string
	var gotObjs []apiruntime.ApplyConfiguration
	observed := Observe(runtimes, func(tj *trainer.TrainJob, objs []apiruntime.ApplyConfiguration) {
		got = append(got, tj.Name)
		gotObjs = objs
	})
	if diff := cmp.Diff([]string{"fail", "ok"}, sortedKeys(observed)); diff != "" {
		t.Errorf("keys mismatch (-want +got):\n%s", diff)
	}

	tj := &trainer.TrainJob{}
	tj.Name = "llm"
	objs, err := observed["ok"].NewObjects(context.Background(), tj)
	if err != nil || len(objs) != 1 || objs[0] != cm {
		t.Errorf("NewObjects = %v, %v; want the runtime's own objects", objs, err)
	}
	if tj.Name != "changed-by-the-runtime" {
		t.Error("the runtime did not get the caller's TrainJob")
	}
	if _, err := observed["fail"].NewObjects(context.Background(), &trainer.TrainJob{}); !errors.Is(err, failing) {
		t.Errorf("error %v, want the runtime's", err)
	}
	// The hook saw the TrainJob as given (a copy taken before the
	// runtime ran), the same objects, and nothing of the failed call.
	if diff := cmp.Diff([]string{"llm"}, got); diff != "" {
		t.Errorf("hook calls mismatch (-want +got):\n%s", diff)
	}
	if len(gotObjs) != 1 || gotObjs[0] != cm {
		t.Errorf("hook objects %v, want the runtime's", gotObjs)
	}
}

func sortedKeys(m map[string]jobruntime.Runtime) []string {
	out := slices.Collect(maps.Keys(m))
	slices.Sort(out)
	return out
}
