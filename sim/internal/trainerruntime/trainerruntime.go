package trainerruntime

import (
	"context"
	"fmt"
	"sync"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	jobruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
)

// newMu serializes every runtimecore.New of the process; see the package
// documentation.
var newMu sync.Mutex

// New calls the trainer's runtimecore.New with c and indexer and no
// configuration (as the trainer's integration framework does), one call at a
// time in the whole process. The map it returns is the trainer's own: its
// keys are runtime group kinds such as
// ClusterTrainingRuntime.trainer.kubeflow.org.
func New(ctx context.Context, c client.Client, indexer client.FieldIndexer) (map[string]jobruntime.Runtime, error) {
	newMu.Lock()
	defer newMu.Unlock()
	runtimes, err := runtimecore.New(ctx, c, indexer, nil)
	if err != nil {
		return nil, fmt.Errorf("failed to set up trainer runtimes: %w", err)
	}
	return runtimes, nil
}

// BuildHook receives every successful NewObjects call of an observed runtime:
// the TrainJob it was given (a deep copy, the hook's to keep) and the apply
// configurations the trainer returned. Those are the trainer's own values,
// which its controller applies after the hook returns: the hook must not
// modify them, and must not read them after it returns (marshal them to keep
// them).
type BuildHook func(trainJob *trainer.TrainJob, objects []apiruntime.ApplyConfiguration)

// Observe returns a copy of runtimes in which every runtime passes each call
// through to the original unchanged and, after a NewObjects call that
// returned no error, calls hook. Errors are returned as they are and not
// reported to the hook.
func Observe(runtimes map[string]jobruntime.Runtime, hook BuildHook) map[string]jobruntime.Runtime {
	out := make(map[string]jobruntime.Runtime, len(runtimes))
	for k, r := range runtimes {
		out[k] = &observed{Runtime: r, hook: hook}
	}
	return out
}

// observed is a runtime whose NewObjects calls are reported to a hook. Every
// other method is the embedded runtime's.
type observed struct {
	jobruntime.Runtime
	hook BuildHook
}

// NewObjects calls the wrapped runtime, then the hook.
func (o *observed) NewObjects(ctx context.Context, trainJob *trainer.TrainJob) ([]apiruntime.ApplyConfiguration, error) {
	var given *trainer.TrainJob
	if trainJob != nil {
		given = trainJob.DeepCopy()
	}
	objects, err := o.Runtime.NewObjects(ctx, trainJob)
	if err == nil {
		o.hook(given, objects)
	}
	return objects, err
}
