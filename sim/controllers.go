package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/trainersim/trainersim/sim/internal/controllers"
	"github.com/trainersim/trainersim/sim/internal/proclog"
)

// The Trainer and JobSet controllers and webhooks, in this process.

func (e *Environment) startControllers(ctx context.Context) error {
	since := e.now()
	logFile, err := os.Create(filepath.Join(e.LogDir(), "controllers.log"))
	if err != nil {
		return fmt.Errorf("failed to create controllers log: %w", err)
	}
	logger := zap.New(zap.WriteTo(logFile), zap.Level(zapcore.InfoLevel))
	// The Trainer and JobSet log through the manager's logger; what the
	// process logs through its global loggers (klog: client-go's
	// reflectors, event broadcasters and warnings outside a scenario's
	// writes; controller-runtime's global logger; the webhook server's TLS
	// errors) comes here too while they run, never to the terminal.
	detachLogs := proclog.Attach(logFile)

	hooks := &e.env.WebhookInstallOptions
	mgrCtx, mgrCancel := context.WithCancel(context.Background())
	mgr, err := controllers.NewManager(mgrCtx, controllers.Options{
		Config:         e.cfg,
		Scheme:         e.scheme,
		WebhookHost:    hooks.LocalServingHost,
		WebhookPort:    hooks.LocalServingPort,
		WebhookCertDir: hooks.LocalServingCertDir,
		Logger:         logger,
		OnBuild:        e.OnTrainerBuild,
	})
	if err != nil {
		mgrCancel()
		detachLogs()
		_ = logFile.Close()
		return err
	}
	e.mgrCancel = mgrCancel
	e.mgrDone = make(chan error, 1)
	go func() {
		err := mgr.Start(mgrCtx)
		detachLogs()
		_ = logFile.Close()
		e.mgrDone <- err
	}()

	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("failed to sync controller caches: %w", ctx.Err())
	}
	// Ready when the API server reaches the webhook server through the
	// webhook configurations: on a snapshot they pointed at the snapshot
	// build's server until installWebhookConfigs updated them.
	var last error
	err = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
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
	e.ready(ComponentControllers, since)
	return nil
}

// webhookProbes are a TrainJob and a JobSet, each sent by webhooksCalled
// through the Trainer's or JobSet's webhooks.
var webhookProbes = []*unstructured.Unstructured{
	{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "TrainJob",
		"metadata":   map[string]any{"name": "trainersim-webhook-probe", "namespace": metav1.NamespaceDefault},
		"spec": map[string]any{"runtimeRef": map[string]any{
			"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "trainersim-webhook-probe",
		}},
	}},
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
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "failed calling webhook") {
			return err
		}
	}
	return nil
}
