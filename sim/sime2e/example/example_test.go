// Package example_test is a suite written in sigs.k8s.io/e2e-framework that
// gets its cluster from trainersim (sim/sime2e), as a user's suite would:
// a TestMain that creates the cluster in Setup and destroys it in Finish,
// two scenario files run as features, and one feature written by hand with
// e2e-framework's builder and client. `make test` runs it on an envtest
// cluster.
package example_test

import (
	"context"
	"os"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/pkg/features"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/sime2e"
	"github.com/trainersim/trainersim/sim/wrappers"
)

// podsRunningTimeout bounds TrainJob created -> its Pods Running, on a
// loaded 2-core machine; pollInterval is how often the wait looks.
const (
	podsRunningTimeout = 90 * time.Second
	pollInterval       = 250 * time.Millisecond
)

var (
	testenv env.Environment
	// trainersim is an envtest cluster with one simulated CPU node for the
	// feature written by hand (each scenario adds nodes of its own).
	trainersim = sime2e.NewProvider(sim.ClusterOptions{
		Nodes: []fakegpu.NodeGroup{{Profile: "cpu", Count: 1}},
	})
	// scenarios are declared before the cluster starts, so that it starts
	// what they need and a file that does not load keeps it from starting.
	scenarios = trainersim.Scenarios(
		"../../../scenarios/examples",
		"../../../scenarios/scheduling/right-accelerator-label.yaml",
	)
)

func TestMain(m *testing.M) {
	testenv = env.NewWithConfig(envconf.New())
	testenv.Setup(envfuncs.CreateCluster(trainersim, "trainersim"))
	testenv.Finish(envfuncs.DestroyCluster("trainersim"))
	os.Exit(testenv.Run(m))
}

// TestScenarios runs each scenario file as a feature.
func TestScenarios(t *testing.T) {
	testenv.Test(t, scenarios...)
}

// namespaceKey holds the feature's namespace in its context.
type namespaceKey struct{}

// TestTrainJobBecomesPods creates a TrainJob with e2e-framework's client and
// waits for the real Trainer, JobSet and Job controller to make its Pods,
// the scheduler to place them and KWOK to run them.
func TestTrainJobBecomesPods(t *testing.T) {
	const name = "mnist"
	f := features.New("a TrainJob becomes Pods").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: envconf.RandomName("example", 16)}}
			if err := cfg.Client().Resources().Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
			return context.WithValue(ctx, namespaceKey{}, ns.Name)
		}).
		Assess("its two Pods are made by the Job controller and run on the CPU node", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := ctx.Value(namespaceKey{}).(string)
			r := cfg.Client().Resources(ns)
			if err := trainer.AddToScheme(r.GetScheme()); err != nil {
				t.Fatal(err)
			}
			job := wrappers.MakeTrainJob(ns, name).Runtime("torch-distributed").NumNodes(2).Obj()
			if err := r.Create(ctx, job); err != nil {
				t.Fatal(err)
			}
			var pods corev1.PodList
			running := func(o k8s.Object) bool { return o.(*corev1.Pod).Status.Phase == corev1.PodRunning }
			ofJob := resources.WithLabelSelector("jobset.sigs.k8s.io/jobset-name=" + name)
			if err := wait.For(conditions.New(r).ResourceListMatchN(&pods, 2, running, ofJob),
				wait.WithContext(ctx), wait.WithTimeout(podsRunningTimeout), wait.WithInterval(pollInterval)); err != nil {
				t.Fatalf("the TrainJob's two Pods are not Running after %s: %v (%d Pods)", podsRunningTimeout, err, len(pods.Items))
			}
			if len(pods.Items) != 2 {
				t.Fatalf("the TrainJob has %d Pods, want 2 (numNodes)", len(pods.Items))
			}
			for _, p := range pods.Items {
				owner := metav1.GetControllerOf(&p)
				if owner == nil || owner.Kind != "Job" {
					t.Errorf("Pod %s is controlled by %v, want a Job", p.Name, owner)
				} else if err := r.Get(ctx, owner.Name, ns, &batchv1.Job{}); err != nil {
					t.Errorf("Pod %s: its Job %s: %v", p.Name, owner.Name, err)
				}
				var node corev1.Node
				if err := r.Get(ctx, p.Spec.NodeName, "", &node); err != nil {
					t.Fatalf("Pod %s: its node %q: %v", p.Name, p.Spec.NodeName, err)
				}
				if got := node.Labels[fakegpu.ProfileLabel]; got != "cpu" {
					t.Errorf("Pod %s runs on node %s of profile %q, want cpu", p.Name, node.Name, got)
				}
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ctx.Value(namespaceKey{}).(string)}}
			if err := cfg.Client().Resources().Delete(ctx, ns); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}
