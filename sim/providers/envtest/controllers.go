package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/controllers"
	"github.com/trainersim/trainersim/sim/internal/proclog"
	"github.com/trainersim/trainersim/sim/probe"
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
	hooks := &e.env.WebhookInstallOptions
	mgrCtx, mgrCancel := context.WithCancel(context.Background())
	// The Trainer's manager serves its webhooks on envtest's port, JobSet's
	// on a port of its own, each with its project's user.
	managers := []struct {
		component string
		port      int
		build     func(context.Context, controllers.Options) (ctrl.Manager, error)
	}{
		{identity.Trainer, hooks.LocalServingPort, controllers.NewTrainerManager},
		{identity.JobSet, e.jobSetWebhookPort, controllers.NewJobSetManager},
	}
	var mgrs []ctrl.Manager
	if e.Views {
		e.views = view.NewRegistry(nil)
	}
	for _, m := range managers {
		cfg, err := e.componentConfig(m.component)
		if err != nil {
			mgrCancel()
			return err
		}
		if e.views != nil {
			cfg.Wrap(e.views.Wrap(m.component))
		}
		mgr, err := m.build(mgrCtx, controllers.Options{
			Config:         cfg,
			Scheme:         e.scheme,
			WebhookHost:    hooks.LocalServingHost,
			WebhookPort:    m.port,
			WebhookCertDir: hooks.LocalServingCertDir,
			Logger:         e.logger.WithName(m.component),
			OnBuild:        e.OnTrainerBuild,
		})
		if err != nil {
			mgrCancel()
			return err
		}
		mgrs = append(mgrs, mgr)
	}
	e.mgrCancel = mgrCancel
	e.mgrDone = make(chan error, 1)
	go func() {
		g, gctx := errgroup.WithContext(mgrCtx)
		for _, mgr := range mgrs {
			g.Go(func() error { return mgr.Start(gctx) })
		}
		e.mgrDone <- g.Wait()
	}()

	for _, mgr := range mgrs {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("failed to sync controller caches: %w", ctx.Err())
		}
	}
	// Ready when the API server reaches the webhook server through the
	// webhook configurations: on a snapshot they pointed at the snapshot
	// build's server until installWebhookConfigs updated them.
	var last error
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-e.mgrDone:
			e.mgrDone <- err
			return false, fmt.Errorf("controller manager stopped: %w", err)
		default:
		}
		last = webhooksCalled(ctx, e.client)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the API server did not reach the webhook server at %s:%d: %w (%v)", hooks.LocalServingHost, hooks.LocalServingPort, err, last)
	}
	e.ready(StepControllers, since)
	return nil
}

// webhookProbes are a TrainJob and a JobSet, each sent by webhooksCalled
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

// webhooksCalled returns nil once the API server calls the webhooks of
// server-side dry-run creates of webhookProbes: whether they admit or
// refuse the probes does not matter, only that the call does not fail.
func webhooksCalled(ctx context.Context, c client.Client) error {
	for _, probe := range webhookProbes {
		if err := webhookCalled(ctx, c, probe); err != nil {
			return err
		}
	}
	return nil
}

// webhookCalled is webhooksCalled for one probe.
func webhookCalled(ctx context.Context, c client.Client, probe *unstructured.Unstructured) error {
	err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
	if err != nil && strings.Contains(err.Error(), "failed calling webhook") {
		return err
	}
	return nil
}

// ViewRegistry returns the registry of the views of the Trainer's and
// JobSet's watches and the components it sees: none when the cluster was
// started without Views, or runs another Trainer release as processes.
func (e *Environment) ViewRegistry() (*view.Registry, []string) {
	if e.views == nil {
		return nil, nil
	}
	return e.views, view.Components()
}
