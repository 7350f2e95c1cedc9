package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

// stopTimeout bounds how long Stop waits for the controller's loops.
const stopTimeout = 10 * time.Second

// userAgent is the provisioner's user agent, in the API server's audit and
// request logs.
const userAgent = "trainersim-local-path-provisioner"

// Controller runs the library's ProvisionController with LocalPath for
// ProvisionerName, on a client of its own. The zero value is not usable:
// Config is required.
type Controller struct {
	// Config reaches the API server; the controller makes its own client
	// from a copy of it.
	Config *rest.Config
	// Logger receives the controller's logs and a line per event it
	// records. Zero: klog's global logger.
	Logger logr.Logger

	cancel context.CancelFunc
	done   chan struct{}
}

// Start starts the controller and returns once its informers (claims,
// volumes, storage classes) have synced, so that no claim is missed from
// then on; ctx bounds only that wait. The controller runs until Stop, with
// neither leader election nor a metrics server.
func (c *Controller) Start(ctx context.Context) error {
	if c.Config == nil {
		return errors.New("failed to start the provisioner: no rest config")
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.UserAgent = userAgent
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create the provisioner's client: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	if c.Logger.GetSink() != nil {
		runCtx = klog.NewContext(runCtx, c.Logger)
	}
	// The informers are the harness's, not the library's own, so that
	// Start can tell when they have synced; the library adds its handlers
	// and indexers to them before they start.
	factory := informers.NewSharedInformerFactory(client, controller.DefaultResyncPeriod)
	claims := factory.Core().V1().PersistentVolumeClaims().Informer()
	volumes := factory.Core().V1().PersistentVolumes().Informer()
	classes := factory.Storage().V1().StorageClasses().Informer()
	pc := controller.NewProvisionController(runCtx, client, ProvisionerName, LocalPath{},
		controller.LeaderElection(false),
		controller.MetricsPort(0),
		controller.ClaimsInformer(claims),
		controller.VolumesInformer(volumes),
		controller.ClassesInformer(classes),
	)
	factory.Start(runCtx.Done())

	c.cancel = cancel
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		pc.Run(runCtx)
		factory.Shutdown()
	}()
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("failed to sync the provisioner's %v informer: %w", typ, ctx.Err())
		}
	}
	return nil
}

// Stop stops the controller and waits for its loops to end. It is safe to
// call on a controller that did not start and more than once.
func (c *Controller) Stop() error {
	if c.cancel == nil {
		return nil
	}
	c.cancel()
	c.cancel = nil
	select {
	case <-c.done:
		return nil
	case <-time.After(stopTimeout):
		return errors.New("failed to stop the provisioner: its loops did not end in time")
	}
}
