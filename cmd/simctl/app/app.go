// Package app is simctl's command tree. Run takes the arguments and the IO
// streams explicitly so that every command, its help text and its exit code
// are testable without a process.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/sim"
)

// Exit codes of simctl.
const (
	// ExitOK: everything passed.
	ExitOK = 0
	// ExitFailed: a check or scenario failed.
	ExitFailed = 1
	// ExitUsage: invalid input or usage.
	ExitUsage = 2
	// ExitCluster: the cluster could not be started.
	ExitCluster = 3
)

// Streams are the standard streams a command reads and writes.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// exitError carries an exit code with the error that caused it.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// ExitCode maps an error returned by Run to simctl's exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return ExitUsage
}

// Run runs simctl with args (without the program name). Errors are printed
// to streams.Err; the returned error maps to an exit code with ExitCode.
func Run(ctx context.Context, streams Streams, args []string) error {
	// The terminal is simctl's own: the libraries' global loggers write to
	// the envtest cluster's logs/controllers.log instead.
	sim.RouteProcessLogs()
	root := newRootCommand(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(streams.Err, "simctl: %v\n", err)
	}
	return err
}

func newRootCommand(streams Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "simctl",
		Short: "Reproduce Kubeflow Trainer RuntimePatches behaviour on a local cluster",
		Long: `simctl starts a real Kubernetes control plane on this machine (kube-apiserver,
etcd, kube-controller-manager, kube-scheduler), runs the released Kubeflow
Trainer and JobSet controllers and webhooks against it, and simulates GPU nodes
with KWOK, so that a TrainJob with runtime patches becomes real Pods placed by
the real scheduler.

The control-plane binaries are built from source by 'simctl assets' into the
user's cache (trainersim/bin), or by 'make assets' into a checkout's bin/;
--assets or $KUBEBUILDER_ASSETS point elsewhere.`,
		Example: `  # a cluster with two H100 nodes and one CPU node, until Ctrl-C
  simctl up --kubeconfig /tmp/sim.kubeconfig
  kubectl --kubeconfig /tmp/sim.kubeconfig get nodes -L nvidia.com/gpu.product

  # other node shapes
  simctl up --kubeconfig /tmp/sim.kubeconfig --nodes nvidia-a100-80gb=4,nvidia-l4=2

  # start, run a GPU TrainJob end to end, stop
  simctl smoke`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(ExitUsage, err) })
	root.AddCommand(newRunCommand(streams), newLintCommand(streams), newNewCommand(streams), newExplainCommand(streams), newMigrateCommand(streams), newImportCommand(streams), newMinimizeCommand(streams), newExploreCommand(streams), newUpCommand(streams), newSmokeCommand(streams), newCleanCommand(streams), newReportCommand(streams), newProfilesCommand(streams), newVersionCommand(streams), newAssetsCommand(streams))
	return root
}
