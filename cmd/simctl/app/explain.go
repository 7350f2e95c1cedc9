package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/sim/explain"
	"github.com/trainersim/trainersim/sim/scenario"
)

type explainFlags struct {
	runtimes   []string
	kubeconfig string
	namespace  string
	output     string
	strict     bool
}

func newExplainCommand(streams Streams) *cobra.Command {
	var f explainFlags
	cmd := &cobra.Command{
		Use:   "explain (FILE [--runtime FILE]... | --kubeconfig PATH [-n NAMESPACE] NAME)",
		Short: "Show how a TrainJob's runtimePatches merge into its Pod templates, and who set each field",
		Long: `explain shows the layered merge the Kubeflow Trainer does for one TrainJob:

  0 runtime    the runtime's Pod templates (from the TrainJob's runtime snapshot
               ConfigMap when it has one, as the trainer reads them)
  1 trainjob   the TrainJob's own spec (trainer, initializer, ...), which the
               trainer's plugins turn into fields (image, command, resources,
               torch environment)
  2 entry 1    the first spec.runtimePatches entry, then each next one in list
  ...          order, each named by its manager

then the final Pod templates, a table of every field of them with the layer
that set it and the value it overrode, every override (a key overwritten, an
atomic list such as tolerations replaced, a keyed list such as containers,
volumes or env merged by name), and the overlaps: fields that two or more
entries set, which is what a scenario's strict: true refuses.

Nothing of the merge is re-implemented: every layer is the trainer's own
NewObjects (strategic merge of the entries in list order, then its plugins,
then its JobSet builder), run in this process with the trainer module simctl
was built with, and the last layer is exactly the JobSet the trainer would
apply now. A running TrainJob is explained as if new: the trainer stops
rebuilding a running JobSet, explain does not.

From a file: FILE holds one TrainJob and, if it wants, the TrainingRuntimes or
ClusterTrainingRuntimes it uses; --runtime adds more. The trainer's default
ClusterTrainingRuntimes are always there. Objects get their CRD's defaults, as
on the API server; fields the CRD does not know are errors, with file and line.
No cluster is involved: the runtimes are served to the trainer from memory
through controller-runtime's fake client (the only place simctl uses it).

From a cluster: --kubeconfig reaches a cluster where the TrainJob exists, such
as one kept by 'simctl up' or 'simctl run --keep' (which print their
kubeconfig). The trainer reads through a real client, sees the runtime
snapshot the trainer took, and nothing is written: every write it attempts
is dropped, and JobSets read as absent so that it renders the whole JobSet.
Without -n the TrainJob is looked up in every namespace and must be the only
one of that NAME (scenario namespaces have random suffixes).

Exit codes: 0 explained, 1 the TrainJob could not be built or the cluster
read, or --strict and two entries set the same field, 2 invalid input or
usage (a file problem, a TrainJob that does not exist).`,
		Example: `  # a TrainJob file on the default runtimes
  simctl explain sim/explain/testdata/three-managers.yaml

  # a TrainJob on a runtime of its own, as JSON
  simctl explain sim/explain/testdata/runtime-tolerations-replaced.yaml \
      --runtime sim/explain/testdata/runtimes/pytorch-distributed-gpu.yaml -o json

  # a live TrainJob: keep a scenario's cluster, then explain its TrainJob llm
  simctl run scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml --keep --work-dir /tmp/sim
  simctl explain --kubeconfig /tmp/sim/kubeconfig llm

  # fail when two entries set the same field (for CI)
  simctl explain job.yaml --strict -o yaml`,
		Args: func(_ *cobra.Command, args []string) error {
			what := "FILE"
			if f.kubeconfig != "" {
				what = "NAME"
			}
			if len(args) != 1 {
				return withCode(ExitUsage, fmt.Errorf("explain needs exactly one %s, got %d arguments", what, len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExplain(cmd.Context(), streams, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.runtimes, "runtime", nil, "a file of TrainingRuntimes or ClusterTrainingRuntimes for FILE (repeatable)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "explain the TrainJob NAME of this cluster instead of a file")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "namespace of NAME with --kubeconfig (default: the only namespace with a TrainJob NAME)")
	fl.StringVarP(&f.output, "output", "o", explain.FormatText, "output format: "+strings.Join(explain.Formats, ", "))
	fl.BoolVar(&f.strict, "strict", false, "exit 1 when two runtimePatches entries set the same field")
	return cmd
}

func runExplain(ctx context.Context, streams Streams, f explainFlags, arg string) error {
	if !slices.Contains(explain.Formats, f.output) {
		return withCode(ExitUsage, fmt.Errorf("invalid --output %q: want %s", f.output, strings.Join(explain.Formats, ", ")))
	}
	var (
		engine   *explain.Engine
		trainJob *trainer.TrainJob
		err      error
	)
	if f.kubeconfig == "" {
		if f.namespace != "" {
			return withCode(ExitUsage, errors.New("-n is for a TrainJob of a cluster (--kubeconfig); a file's TrainJob has its namespace in the file"))
		}
		engine, trainJob, err = explain.FromFiles(ctx, arg, f.runtimes)
		var problems *scenario.Errors
		switch {
		case errors.As(err, &problems):
			return withCode(ExitUsage, fmt.Errorf("invalid input:\n%w", err))
		case err != nil:
			return withCode(ExitFailed, err)
		}
	} else {
		if len(f.runtimes) > 0 {
			return withCode(ExitUsage, errors.New("--runtime is for a file's TrainJob: on a cluster the trainer reads the cluster's runtimes"))
		}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: f.kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("failed to load kubeconfig %s: %w", f.kubeconfig, err))
		}
		if engine, err = explain.NewForConfig(ctx, cfg); err != nil {
			return withCode(ExitFailed, err)
		}
		trainJob, err = engine.TrainJob(ctx, f.namespace, arg)
		switch {
		case apierrors.IsNotFound(err), errors.Is(err, explain.ErrAmbiguous):
			return withCode(ExitUsage, err)
		case err != nil:
			return withCode(ExitFailed, err)
		}
	}
	res, err := engine.Explain(ctx, trainJob)
	if err != nil {
		if f.kubeconfig == "" && apierrors.IsNotFound(err) {
			err = fmt.Errorf("%w (a runtime of your own goes in FILE or in a --runtime file)", err)
		}
		return withCode(ExitFailed, err)
	}
	if err := res.Write(streams.Out, f.output); err != nil {
		return withCode(ExitFailed, err)
	}
	if f.strict && len(res.Overlaps) > 0 {
		var lines []string
		for _, o := range res.Overlaps {
			lines = append(lines, "  "+o.String())
		}
		return withCode(ExitFailed, fmt.Errorf("--strict: runtimePatches entries of TrainJob %s/%s set the same fields:\n%s",
			trainJob.Namespace, trainJob.Name, strings.Join(lines, "\n")))
	}
	return nil
}
