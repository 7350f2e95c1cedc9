package probe

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runtimeSeenTimeout bounds the wait until the Trainer sees the runtimes a
// scenario's setup created.
const runtimeSeenTimeout = 30 * time.Second

// runtimeNotFound is what the Trainer's TrainJob webhook answers for a
// runtime it cannot find.
const runtimeNotFound = "must be created before the TrainJob is created"

// TrainJob returns a TrainJob of a name in namespace that refers to
// the runtime of a kind (ClusterTrainingRuntime or TrainingRuntime) and
// name, for a server-side dry run (client.DryRunAll) that asks the
// admission chain what it makes of a TrainJob: nothing is stored. It is
// unstructured, so that the answer of any release's API server is read as
// it is.
func TrainJob(namespace, name, runtimeKind, runtimeName string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "TrainJob",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{"runtimeRef": map[string]any{
			"apiGroup": "trainer.kubeflow.org", "kind": runtimeKind, "name": runtimeName,
		}},
	}}
}

// WaitRuntimesSeen waits until the Trainer's TrainJob webhook, which reads
// runtimes from its controller's cache, finds every runtime just created:
// a server-side dry run of a TrainJob in namespace naming it is no longer
// refused as not found. A scenario's set-up (and simctl migrate --verify)
// is done only then, so that the first TrainJob does not race that cache. On a kind cluster the webhook
// runs in another process and sees a new runtime some milliseconds after
// its create; envtest's in-process Trainer is quicker, not different.
func WaitRuntimesSeen(ctx context.Context, c client.Client, namespace string, runtimes []*unstructured.Unstructured) error {
	for _, rt := range runtimes {
		probe := TrainJob(namespace, "trainersim-runtime-probe", rt.GetKind(), rt.GetName())
		var last error
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, runtimeSeenTimeout, true, func(ctx context.Context) (bool, error) {
			last = c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
			return last == nil || !strings.Contains(last.Error(), runtimeNotFound), nil
		})
		if err != nil {
			return fmt.Errorf("the Trainer did not see %s %s within %s: %v", rt.GetKind(), rt.GetName(), runtimeSeenTimeout, last)
		}
	}
	return nil
}
