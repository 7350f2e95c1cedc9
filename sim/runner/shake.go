package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/gate"
	"github.com/trainersim/trainersim/sim/shake"
)

// A shaken run's delays (sim/shake), through the gates' server.

// shakeMaxDelay is the bound of each delay of a shaken run.
func (r *Runner) shakeMaxDelay() time.Duration {
	if r.ShakeMaxDelay > 0 {
		return r.ShakeMaxDelay
	}
	return shake.DefaultMaxDelay
}

// delayerName is the cluster-wide name of a shaken run's delayer.
func (s *scenarioRun) delayerName() string { return "trainersim-shake-" + s.nsSuffix() }

// installDelayer, for a shaken run, delays every write in the scenario's
// namespace by its seed from now on, and waits until the API server calls
// the delayer.
func (s *scenarioRun) installDelayer(ctx context.Context) error {
	if s.shake == nil {
		return nil
	}
	serving, ok := s.cluster.(cluster.GateServing)
	if !ok {
		return errors.New("this cluster cannot call the shaker's webhook (--shake needs a cluster simctl starts: envtest)")
	}
	server, err := serving.ServeGates()
	if err != nil {
		return err
	}
	s.gateServer = server
	seed, max := s.shake.Seed, s.runner.shakeMaxDelay()
	cfg := server.RegisterDelayer(gate.Delayer{
		Name:      s.delayerName(),
		Namespace: s.ns,
		Labels:    s.clusterLabels(),
		Delay:     func(key string, n int) time.Duration { return shake.Delay(seed, max, key, n) },
	})
	c := s.cluster.Client()
	if err := c.Create(ctx, cfg); err != nil {
		return fmt.Errorf("failed to create the shaker's webhook configuration: %w", err)
	}
	// In force once a dry run of a write in the namespace reaches it.
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "trainersim-shake-probe"}}
	return waitCalled(ctx, c, probe, "the shaker's webhook", func() (bool, error) { return server.DelayerProbed(cfg.Name), nil })
}

// uninstallDelayer deletes a shaken run's delayer and records in the
// run's result how many requests it delayed.
func (s *scenarioRun) uninstallDelayer(ctx context.Context) error {
	if s.shake == nil || s.gateServer == nil {
		return nil
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: s.delayerName()}}
	err := client.IgnoreNotFound(s.cluster.Client().Delete(ctx, cfg))
	n, total, abandoned := s.gateServer.UnregisterDelayer(s.delayerName())
	if s.shaken != nil {
		s.shaken.Delayed, s.shaken.Delay = n, total
	}
	if abandoned > 0 {
		err = errors.Join(err, fmt.Errorf("the API server stopped waiting for %d delayed requests (they failed): lower --shake-max-delay", abandoned))
	}
	return err
}
