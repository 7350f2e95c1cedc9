package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/controllers"
	"github.com/trainersim/trainersim/sim/internal/proclog"
	"github.com/trainersim/trainersim/sim/probe"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/view"
)

// The Trainer and JobSet controllers and webhooks, in this process.

// controllersLogName is the log, under LogDir, of everything that runs in
// this process: the Trainer and JobSet controllers and webhooks, the
// provisioner, and the process's global loggers while they run.
const controllersLogName = "controllers.log"

// openInProcessLog creates logs/controllers.log and the logger of the
// in-process components, and routes the process's global loggers to it
// (proclog) until closeInProcessLog.
func (e *Environment) openInProcessLog() error {
	logFile, err := os.Create(filepath.Join(e.LogDir(), controllersLogName))
	if err != nil {
		return fmt.Errorf("failed to create controllers log: %w", err)
	}
	e.logFile = logFile
	e.logger = zap.New(zap.WriteTo(logFile), zap.Level(zapcore.InfoLevel))
	// The Trainer and JobSet log through the manager's logger and the
	// provisioner through its own; what the process logs through its global
	// loggers (klog: client-go's reflectors, event broadcasters and
	// warnings outside a scenario's writes; controller-runtime's global
	// logger; the webhook server's TLS errors) comes here too while they
	// run, never to the terminal.
	e.detachLogs = proclog.Attach(logFile)
	return nil
}

// closeInProcessLog detaches and closes the log of openInProcessLog, once
// nothing in this process writes to it any more.
func (e *Environment) closeInProcessLog() error {
	if e.logFile == nil {
		return nil
	}
	e.detachLogs()
	err := e.logFile.Close()
	e.logFile, e.detachLogs = nil, nil
	if err != nil {
		return fmt.Errorf("failed to close controllers log: %w", err)
	}
	return nil
}

func (e *Environment) startControllers(ctx context.Context) error {
	if !e.release.InProcess() {
		return e.startReleaseControllers(ctx)
	}
	since := e.now()
	if err := e.startInProcessManagers(ctx); err != nil {
		return err
	}
	e.ready(StepControllers, since)
	return nil
}

// startInProcessManagers starts the Trainer's and JobSet's managers in this
// process and returns once their caches have synced and the API server
// reaches their webhooks.
func (e *Environment) startInProcessManagers(ctx context.Context) error {
	hooks := &e.env.WebhookInstallOptions
	// The Trainer's manager serves its webhooks on envtest's port, JobSet's
	// on a port of its own, each with its project's user.
	managers := []*inProcessManager{
		{component: identity.Trainer, port: hooks.LocalServingPort, build: controllers.NewTrainerManager, probe: webhookProbes[0]},
		{component: identity.JobSet, port: e.jobSetWebhookPort, build: controllers.NewJobSetManager, probe: webhookProbes[1]},
	}
	e.setInProcessManagers(managers)
	for _, m := range managers {
		if err := e.runManager(m); err != nil {
			return err
		}
	}
	for _, m := range managers {
		if err := e.waitManager(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// webhookProbes are a TrainJob and a JobSet, each sent by webhookCalled
// through the Trainer's or JobSet's webhooks.
var webhookProbes = []*unstructured.Unstructured{
	probe.TrainJob(metav1.NamespaceDefault, "trainersim-webhook-probe", "ClusterTrainingRuntime", "trainersim-webhook-probe"),
	{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2",
		"kind":       "JobSet",
		"metadata":   map[string]any{"name": "trainersim-webhook-probe", "namespace": metav1.NamespaceDefault},
		"spec":       map[string]any{"replicatedJobs": []any{}},
	}},
}

// webhookCalled returns nil once the API server calls the webhooks of a
// server-side dry-run create of a probe: whether they admit or refuse it
// does not matter, only that the call does not fail.
func webhookCalled(ctx context.Context, c client.Client, probe *unstructured.Unstructured) error {
	err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
	if err != nil && strings.Contains(err.Error(), "failed calling webhook") {
		return err
	}
	return nil
}

// ViewRegistry returns the registry of the views of the components'
// watches and the components it sees: none when the cluster was started
// without Views.
func (e *Environment) ViewRegistry() (*view.Registry, []string) {
	if e.views == nil {
		return nil, nil
	}
	// The in-process managers' transports always; the processes' proxies
	// when the run named them (the Trainer's names JobSet's too: a release
	// runs both).
	var seen []string
	for _, c := range view.Components() {
		named := slices.Contains(e.Views, c) || c == identity.JobSet && slices.Contains(e.Views, identity.Trainer)
		switch {
		case c == releases.ComponentKueue && !slices.Contains(e.Components, releases.ComponentKueue):
		case (c == identity.Trainer || c == identity.JobSet) && e.release.InProcess(), named:
			seen = append(seen, c)
		}
	}
	return e.views, seen
}
