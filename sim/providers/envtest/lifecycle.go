package envtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/controllers"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/startup"
	"github.com/trainersim/trainersim/sim/view"
)

// The lifecycle of the Trainer's and JobSet's managers in this process and
// of the components that run as processes (Kueue, kube-controller-manager,
// kube-scheduler, KWOK): each runs until it is crashed or stopped, and starts
// again with an empty cache (cluster.ComponentLifecycle).

// inProcessManager is one of the managers in this process.
type inProcessManager struct {
	component string
	port      int
	build     func(context.Context, controllers.Options) (ctrl.Manager, error)
	probe     *unstructured.Unstructured // a dry-run create its webhooks answer

	mu     sync.Mutex
	mgr    ctrl.Manager
	kill   *killSwitch
	cancel context.CancelFunc
	done   chan error // Start's result, once: nil while it is down
	// progress observes the Trainer's manager while it is up
	// (controllers.Options.Progress); nil for JobSet's.
	progress *controllers.Progress
}

// runManager builds a new manager of m's component, with an empty cache and
// a kill switch in its transport, and starts it.
func (e *Environment) runManager(m *inProcessManager) error {
	hooks := &e.env.WebhookInstallOptions
	cfg, err := e.componentConfig(m.component)
	if err != nil {
		return err
	}
	if e.views != nil {
		cfg.Wrap(e.views.Wrap(m.component))
	}
	kill := newKillSwitch()
	cfg.Wrap(kill.wrap)
	var progress *controllers.Progress
	if m.component == identity.Trainer {
		progress = controllers.NewProgress(e.scheme)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := m.build(ctx, controllers.Options{
		Config:         cfg,
		Scheme:         e.scheme,
		WebhookHost:    hooks.LocalServingHost,
		WebhookPort:    m.port,
		WebhookCertDir: hooks.LocalServingCertDir,
		Logger:         e.logger.WithName(m.component),
		OnBuild:        e.OnTrainerBuild,
		Progress:       progress,
	})
	if err != nil {
		cancel()
		return err
	}
	done := make(chan error, 1)
	m.mu.Lock()
	m.mgr, m.kill, m.cancel, m.done, m.progress = mgr, kill, cancel, done, progress
	m.mu.Unlock()
	go func() { done <- mgr.Start(ctx) }()
	return nil
}

// waitManager returns once m's caches have synced and the API server
// reaches its webhooks.
func (e *Environment) waitManager(ctx context.Context, m *inProcessManager) error {
	m.mu.Lock()
	mgr, done := m.mgr, m.done
	m.mu.Unlock()
	if e.views != nil {
		// A view holds watch events, not a list: an informer that a
		// controller starts late (controller-runtime starts a
		// controller's sources after the cache, without the wait below)
		// would list a scenario's first objects past every view. So on a
		// run with views each watched resource's informer starts, and
		// lists, before the component counts as started.
		if err := startWatchedInformers(ctx, mgr, m.component); err != nil {
			return err
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("failed to sync the caches of %s: %w", m.component, ctx.Err())
	}
	// Ready when the API server reaches the webhook server through the
	// webhook configurations: on a snapshot they pointed at the snapshot
	// build's server until installWebhookConfigs updated them.
	var last error
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			done <- err
			return false, fmt.Errorf("the manager of %s stopped: %w", m.component, err)
		default:
		}
		last = webhookCalled(ctx, e.client, m.probe)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the API server did not reach the webhook server of %s on port %d: %w (%v)", m.component, m.port, err, last)
	}
	return nil
}

// startWatchedInformers starts, and waits for, the informer of each
// resource the component watches (view.Watches), the ones its controllers
// use: one per kind in the manager's cache.
func startWatchedInformers(ctx context.Context, mgr ctrl.Manager, component string) error {
	for _, gr := range view.Watches(component) {
		group, resource, _ := strings.Cut(gr, "/")
		if group == "core" {
			group = ""
		}
		gvk, err := mgr.GetRESTMapper().KindFor(schema.GroupVersionResource{Group: group, Resource: resource})
		if err != nil {
			continue // a CRD this cluster does not have (podgroups)
		}
		if _, err := mgr.GetCache().GetInformerForKind(ctx, gvk); err != nil {
			return fmt.Errorf("failed to start the %s informer of %s: %w", gr, component, err)
		}
	}
	return nil
}

// cancelRun cancels m's manager's context: a graceful stop. What its
// queues held goes with it (progress).
func (m *inProcessManager) cancelRun() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cancel != nil {
		m.cancel()
	}
	m.progress = nil
}

// wait waits, at most grace, for m's manager to return, and marks it down.
func (m *inProcessManager) wait(grace time.Duration) error {
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case err := <-done:
		m.mu.Lock()
		m.mgr, m.kill, m.cancel, m.done, m.progress = nil, nil, nil, nil, nil
		m.mu.Unlock()
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("the manager of %s: %w", m.component, err)
		}
		return nil
	case <-time.After(grace):
		return fmt.Errorf("the manager of %s did not stop within %s", m.component, grace)
	}
}

// up reports whether m's manager runs.
func (m *inProcessManager) up() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.done != nil
}

// processComponent is a component that runs as a process of its own:
// crashed by SIGKILL, stopped by SIGTERM, started as a new process.
type processComponent struct {
	component string
	// start starts its nth process (0: the first).
	start func(n int) (*proc.Process, error)
	// ready returns nil once the process serves (its webhooks answer).
	ready func(context.Context) error
	// part, if set, is the component's part that runs in this process
	// (KWOK's: the simulated kubelet's volume manager). It is started once
	// the process is ready and stopped as soon as the process is down: a
	// kubelet down writes nothing, its volume manager included.
	part *inProcessPart

	mu     sync.Mutex
	p      *proc.Process // nil while it is down
	starts int
}

// run starts a new process of c and returns once it is ready.
func (c *processComponent) run(ctx context.Context) error {
	c.mu.Lock()
	n := c.starts
	c.starts++
	c.mu.Unlock()
	p, err := c.start(n)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.p = p
	c.mu.Unlock()
	if err := p.WaitUntil(ctx, startup.PollInterval, c.ready); err != nil {
		return fmt.Errorf("%s did not start: %w", c.component, err)
	}
	if c.part != nil {
		if err := c.part.start(ctx); err != nil {
			return fmt.Errorf("%s did not start: %w", c.component, err)
		}
	}
	return nil
}

// inProcessPart is the part of a process component that runs in this
// process, started and stopped with it.
type inProcessPart struct {
	run func(context.Context) (stop func(), err error)

	mu   sync.Mutex
	stop func() // nil while it is down
}

// start runs the part.
func (p *inProcessPart) start(ctx context.Context) error {
	stop, err := p.run(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.stop = stop
	p.mu.Unlock()
	return nil
}

// halt stops the part if it runs and waits for it.
func (p *inProcessPart) halt() {
	p.mu.Lock()
	stop := p.stop
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// act crashes, stops or starts c.
func (c *processComponent) act(ctx context.Context, action string) error {
	c.mu.Lock()
	p := c.p
	c.mu.Unlock()
	switch action {
	case cluster.ComponentCrash, cluster.ComponentStop:
		if p == nil {
			return fmt.Errorf("%s is down already", c.component)
		}
		if action == cluster.ComponentCrash {
			p.Kill()
		} else if err := p.Stop(stopTimeout); err != nil {
			return err
		}
		if c.part != nil {
			c.part.halt()
		}
		c.mu.Lock()
		c.p = nil
		c.mu.Unlock()
		return nil
	case cluster.ComponentStart:
		if p != nil {
			return fmt.Errorf("%s runs already", c.component)
		}
		return c.run(ctx)
	}
	return fmt.Errorf("unknown action %s of component %s", action, c.component)
}

// up reports whether c runs.
func (c *processComponent) up() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.p != nil
}

// LifecycleComponents returns the components ComponentAction can crash,
// stop and start: the Trainer and JobSet when their managers run in this
// process, and the processes (Kueue when it runs).
func (e *Environment) LifecycleComponents() []string {
	var out []string
	for _, m := range e.inProcessManagers() {
		out = append(out, m.component)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.processComponents {
		out = append(out, c.component)
	}
	return out
}

var _ cluster.CatchUp = (*Environment)(nil)

// Behind implements cluster.CatchUp for the Trainer when its manager runs
// in this process and is up (controllers.Progress): "" when it is down or
// runs as a process of its own, whose queues this process cannot see.
func (e *Environment) Behind(ns string, seen map[schema.GroupKind]map[string]string) (string, time.Time) {
	for _, m := range e.inProcessManagers() {
		m.mu.Lock()
		p := m.progress
		m.mu.Unlock()
		if p != nil {
			behind, idle := p.Behind(ns, seen)
			if behind != "" {
				behind = m.component + ": " + behind
			}
			return behind, idle
		}
	}
	return "", time.Time{}
}

// inProcessManagers returns the Trainer's and JobSet's managers in this
// process as they are now (an upgrade replaces them).
func (e *Environment) inProcessManagers() []*inProcessManager {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.managers)
}

// setInProcessManagers makes ms the managers in this process.
func (e *Environment) setInProcessManagers(ms []*inProcessManager) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.managers = ms
}

// processComponentOf returns the process component of a name, or nil.
func (e *Environment) processComponentOf(component string) *processComponent {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.processComponents {
		if c.component == component {
			return c
		}
	}
	return nil
}

// ComponentAction crashes, stops, starts or restarts a component
// (cluster.ComponentCrash, ...) and returns once it is done: a crash or a
// stop once its manager has returned, a start once its caches have synced
// and the API server reaches its webhooks.
func (e *Environment) ComponentAction(ctx context.Context, component, action string) error {
	if action == cluster.ComponentRestart {
		if err := e.ComponentAction(ctx, component, cluster.ComponentStop); err != nil {
			return err
		}
		return e.ComponentAction(ctx, component, cluster.ComponentStart)
	}
	if c := e.processComponentOf(component); c != nil {
		return c.act(ctx, action)
	}
	managers := e.inProcessManagers()
	i := slices.IndexFunc(managers, func(m *inProcessManager) bool { return m.component == component })
	if i < 0 {
		return fmt.Errorf("component %s does not run on this cluster, or not where simctl can crash, stop or start it", component)
	}
	m := managers[i]
	switch action {
	case cluster.ComponentCrash, cluster.ComponentStop:
		if !m.up() {
			return fmt.Errorf("%s is down already", component)
		}
		if action == cluster.ComponentCrash {
			// No write after this instant: every request fails, those in
			// flight too; then the manager's own stop, which can send
			// nothing.
			m.mu.Lock()
			m.kill.kill()
			m.mu.Unlock()
		}
		m.cancelRun()
		return m.wait(stopTimeout)
	case cluster.ComponentStart:
		if m.up() {
			return fmt.Errorf("%s runs already", component)
		}
		if err := e.runManager(m); err != nil {
			return err
		}
		return e.waitManager(ctx, m)
	}
	return fmt.Errorf("unknown action %s of component %s", action, component)
}

// ComponentUp reports whether a component runs.
func (e *Environment) ComponentUp(component string) bool {
	if c := e.processComponentOf(component); c != nil {
		return c.up()
	}
	managers := e.inProcessManagers()
	i := slices.IndexFunc(managers, func(m *inProcessManager) bool { return m.component == component })
	return i >= 0 && managers[i].up()
}

// stopTimeout bounds a manager's stop: its runnables' own grace.
const stopTimeout = 30 * time.Second

// errCrashed is what every request of a crashed component gets.
var errCrashed = errors.New("the component crashed (trainersim)")

// killSwitch fails every request of a component once killed, cancelling
// those in flight: what a crashed process sends no more.
type killSwitch struct {
	mu       sync.Mutex
	dead     bool
	inFlight map[*cancelBody]struct{}
}

func newKillSwitch() *killSwitch { return &killSwitch{inFlight: map[*cancelBody]struct{}{}} }

func (k *killSwitch) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		ctx, cancel := context.WithCancel(req.Context())
		b := &cancelBody{k: k, cancel: cancel}
		k.mu.Lock()
		if k.dead {
			k.mu.Unlock()
			cancel()
			return nil, errCrashed
		}
		k.inFlight[b] = struct{}{}
		k.mu.Unlock()
		resp, err := rt.RoundTrip(req.WithContext(ctx))
		if err != nil {
			b.done()
			return nil, err
		}
		b.ReadCloser = resp.Body
		resp.Body = b
		return resp, nil
	})
}

// kill fails every request from now on and cancels those in flight.
func (k *killSwitch) kill() {
	k.mu.Lock()
	k.dead = true
	inFlight := k.inFlight
	k.inFlight = map[*cancelBody]struct{}{}
	k.mu.Unlock()
	for b := range inFlight {
		b.cancel()
	}
}

// cancelBody is a response body whose Close ends its request's context.
type cancelBody struct {
	io.ReadCloser
	k      *killSwitch
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

// done forgets the request and cancels its context.
func (b *cancelBody) done() {
	b.k.mu.Lock()
	delete(b.k.inFlight, b)
	b.k.mu.Unlock()
	b.cancel()
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
