package sim

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/trainersim/trainersim/sim/internal/controllers"
)

// The Trainer and JobSet controllers and webhooks, in this process.

var setGlobalLogger sync.Once

func (e *Environment) startControllers(ctx context.Context) error {
	since := e.now()
	logFile, err := os.Create(filepath.Join(e.LogDir(), "controllers.log"))
	if err != nil {
		return fmt.Errorf("failed to create controllers log: %w", err)
	}
	logger := zap.New(zap.WriteTo(logFile), zap.Level(zapcore.InfoLevel))
	// controller-runtime warns on stderr when its global logger is never set;
	// the Trainer and JobSet log through the manager's logger otherwise.
	setGlobalLogger.Do(func() { ctrl.SetLogger(logger) })

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
		_ = logFile.Close()
		return err
	}
	e.mgrCancel = mgrCancel
	e.mgrDone = make(chan error, 1)
	go func() {
		err := mgr.Start(mgrCtx)
		_ = logFile.Close()
		e.mgrDone <- err
	}()

	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("failed to sync controller caches: %w", ctx.Err())
	}
	addr := net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(hooks.LocalServingPort))
	dialer := &net.Dialer{Timeout: time.Second}
	err = wait.PollUntilContextCancel(ctx, pollInterval, true, func(context.Context) (bool, error) {
		select {
		case err := <-e.mgrDone:
			e.mgrDone <- err
			return false, fmt.Errorf("controller manager stopped: %w", err)
		default:
		}
		conn, err := tls.DialWithDialer(dialer, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, nil
		}
		return true, conn.Close()
	})
	if err != nil {
		return fmt.Errorf("failed to reach the webhook server at %s: %w", addr, err)
	}
	e.ready(ComponentControllers, since)
	return nil
}
