package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/probe"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/wrappers"
)

// smokeTimeout bounds the wait for the smoke TrainJob's Pods to run.
const smokeTimeout = 2 * time.Minute

func newSmokeCommand(streams Streams) *cobra.Command {
	var flags clusterFlags
	cmd := &cobra.Command{
		Use:   "smoke",
		Short: "Start a cluster, run one GPU TrainJob with a runtime patch end to end, stop",
		Long: `smoke is the end-to-end check of a trainersim cluster. It starts the cluster,
creates a TrainJob on the torch-distributed runtime with two nodes of 8 GPUs
each and a runtime patch from manager kueue.x-k8s.io/manager that tolerates the
GPU taint, and waits until the Job controller has created both Pods, the
scheduler has bound them to the two H100 nodes and KWOK reports them Running.
It prints the Pods and exits 0, or exits 1 with what it saw instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := flags.options("")
			if err != nil {
				return err
			}
			// The nodes are the smoke namespace's own, created after it.
			nodes := o.Nodes
			o.Nodes = nil
			return runSmoke(cmd.Context(), streams.Out, o, nodes)
		},
	}
	flags.register(cmd)
	flags.registerExisting(cmd)
	return cmd
}

func runSmoke(ctx context.Context, out io.Writer, o sim.ClusterOptions, groups []fakegpu.NodeGroup) (err error) {
	env, err := startCluster(ctx, out, o)
	defer stopCluster(env, &err)
	if err != nil {
		return err
	}
	c := env.Client()
	// The smoke check's Pods run on nodes of its own, as a scenario's do, so
	// that it never touches the nodes of a cluster it did not start.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: runner.NamespaceName("smoke")}}
	var nodes []string
	defer func() {
		cleanupCtx := context.WithoutCancel(ctx)
		nsErr := client.IgnoreNotFound(c.Delete(cleanupCtx, ns))
		if cleanupErr := errors.Join(nsErr, env.RemoveNodes(cleanupCtx, nodes)); cleanupErr != nil && err == nil {
			err = withCode(ExitCluster, fmt.Errorf("failed to delete the smoke namespace and nodes: %w", cleanupErr))
		}
	}()
	since := time.Now()
	if nodes, err = isolatedNamespace(ctx, env, ns.Name, groups); err != nil {
		return withCode(ExitCluster, err)
	}
	fmt.Fprintf(out, "%d nodes ready in %s: %s\n", len(nodes), time.Since(since).Round(10*time.Millisecond), strings.Join(nodes, ", "))
	job := wrappers.MakeTrainJob(ns.Name, "gpu-smoke").
		Runtime("torch-distributed").NumNodes(2).GPUs(8).
		PodSpecPatch("kueue.x-k8s.io/manager", "node", trainer.PodSpecPatch{
			Tolerations: []corev1.Toleration{wrappers.GPUToleration()},
		}).Obj()
	var obj client.Object = job
	patch := "a runtime patch from kueue.x-k8s.io/manager"
	if release, err := releases.LookupTrainer(env.Versions().Trainer); err == nil && !v1alpha1.HasTrainJobField(release.Version, "spec.runtimePatches") {
		// A release before runtimePatches: the same toleration as a
		// podTemplateOverrides entry.
		if obj, err = legacyTrainJob(job); err != nil {
			return withCode(ExitFailed, err)
		}
		patch = "podTemplateOverrides"
	}
	fmt.Fprintf(out, "creating TrainJob %s/%s: torch-distributed, 2 nodes x 8 nvidia.com/gpu, GPU toleration from %s\n", job.Namespace, job.Name, patch)
	if err := c.Create(ctx, obj); err != nil {
		return withCode(ExitFailed, fmt.Errorf("failed to create trainjob: %w", err))
	}
	start := time.Now()
	var pods []corev1.Pod
	waitErr := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, smokeTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if pods, err = probe.TrainJobPods(ctx, c, ns.Name, job.Name); err != nil {
			return false, err
		}
		return len(pods) == 2 && allRunningOn(ctx, c, pods, "nvidia-h100-80gb"), nil
	})
	printPods(ctx, out, c, pods)
	if waitErr != nil {
		return withCode(ExitFailed, fmt.Errorf("smoke check failed: want 2 Running pods on nvidia-h100-80gb nodes within %s: %w", smokeTimeout, waitErr))
	}
	fmt.Fprintf(out, "smoke check passed: 2 pods Running on H100 nodes %s after create\n", time.Since(start).Round(10*time.Millisecond))
	return nil
}

// allRunningOn reports whether every Pod is Running on a node of profile.
// legacyTrainJob is job with its runtimePatches moved into
// podTemplateOverrides, the API of the Trainer before v2.2.0: one override per
// replicated job, with the Pod spec patch's tolerations.
func legacyTrainJob(job *trainer.TrainJob) (*unstructured.Unstructured, error) {
	u, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		return nil, fmt.Errorf("failed to convert the smoke TrainJob: %w", err)
	}
	var overrides []any
	for _, p := range job.Spec.RuntimePatches {
		for _, rj := range p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs {
			spec := rj.Template.Spec.Template.Spec
			tolerations, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(&struct {
				Tolerations []corev1.Toleration `json:"tolerations"`
			}{spec.Tolerations})
			if err != nil {
				return nil, err
			}
			overrides = append(overrides, map[string]any{"targetJobs": []any{map[string]any{"name": rj.Name}}, "spec": tolerations})
		}
	}
	spec := u["spec"].(map[string]any)
	delete(spec, "runtimePatches")
	spec["podTemplateOverrides"] = overrides
	return &unstructured.Unstructured{Object: u}, nil
}

func allRunningOn(ctx context.Context, c client.Reader, pods []corev1.Pod, profile string) bool {
	for i := range pods {
		if pods[i].Status.Phase != corev1.PodRunning || nodeProfile(ctx, c, pods[i].Spec.NodeName) != profile {
			return false
		}
	}
	return true
}

func nodeProfile(ctx context.Context, c client.Reader, nodeName string) string {
	if nodeName == "" {
		return ""
	}
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: nodeName}, n); err != nil {
		return ""
	}
	return n.Labels[fakegpu.ProfileLabel]
}

func printPods(ctx context.Context, out io.Writer, c client.Reader, pods []corev1.Pod) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tPHASE\tNODE\tPROFILE\tSCHEDULING")
	for i := range pods {
		p := &pods[i]
		sched := "-"
		if cond := probe.PodScheduledCondition(p); cond != nil && cond.Status != corev1.ConditionTrue {
			sched = strings.TrimSpace(cond.Reason + ": " + cond.Message)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Status.Phase, orDash(p.Spec.NodeName), orDash(nodeProfile(ctx, c, p.Spec.NodeName)), sched)
	}
	if len(pods) == 0 {
		fmt.Fprintln(w, "(no pods)")
	}
	_ = w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
