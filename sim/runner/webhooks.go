package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/probe"
	"github.com/trainersim/trainersim/sim/webhooks"
)

// The scenario's admission webhooks (spec.webhooks), served by this process.

// webhookReadyTimeout bounds the wait until the API server calls a new
// webhook configuration.
const webhookReadyTimeout = 30 * time.Second

// managerWebhooks are the scenario's webhooks as the server takes them.
func (s *scenarioRun) managerWebhooks() []webhooks.Webhook {
	labels := s.clusterLabels()
	var out []webhooks.Webhook
	for _, w := range s.sc.Spec.Webhooks {
		ops := w.Operations
		if len(ops) == 0 {
			ops = []string{"CREATE"}
		}
		reinvocation, failure := w.ReinvocationPolicy, w.FailurePolicy
		if reinvocation == "" {
			reinvocation = "Never"
		}
		if failure == "" {
			failure = "Fail"
		}
		out = append(out, webhooks.Webhook{
			Name:               w.Name + "-" + s.nsSuffix(),
			Namespace:          s.ns,
			Manager:            w.Manager,
			Entry:              deepCopy(w.Entry),
			Operations:         ops,
			ReinvocationPolicy: reinvocation,
			FailurePolicy:      failure,
			Labels:             labels,
		})
	}
	return out
}

// nsSuffix is the random suffix of the scenario's namespace, which makes
// the names of its cluster-wide objects unique.
func (s *scenarioRun) nsSuffix() string { return namespaceSuffix(s.ns) }

// installWebhooks serves the scenario's webhooks and creates their
// configurations, and waits until the API server calls each (for a
// server-side dry run of a TrainJob).
func (s *scenarioRun) installWebhooks(ctx context.Context) error {
	s.webhooks = s.managerWebhooks()
	hooks := s.webhooks
	if len(hooks) == 0 {
		return nil
	}
	serving, ok := s.cluster.(cluster.WebhookServing)
	if !ok {
		return errors.New("this cluster cannot call webhooks served by simctl (spec.webhooks needs envtest)")
	}
	server, err := serving.ServeWebhooks()
	if err != nil {
		return err
	}
	s.webhookServer = server
	c := s.cluster.Client()
	for _, h := range hooks {
		if err := c.Create(ctx, server.Register(h)); err != nil {
			return fmt.Errorf("failed to create webhook configuration %s: %w", h.Name, err)
		}
	}
	probe := probe.TrainJob(s.ns, "trainersim-webhook-probe", "ClusterTrainingRuntime", "torch-distributed")
	for _, h := range hooks {
		if err := waitCalled(ctx, c, probe, "webhook "+h.Name, func() (bool, error) { return server.DryRunCalled(h) }); err != nil {
			return err
		}
	}
	return nil
}

// waitCalled sends server-side dry-run creates of probe until called says
// that the API server called the webhook (what names it), within
// webhookReadyTimeout. The dry run may be refused after the call (by the
// Trainer's validation, say): only the call matters, the refusal is kept
// for the message.
func waitCalled(ctx context.Context, c client.Client, probe client.Object, what string, called func() (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, webhookReadyTimeout, true, func(ctx context.Context) (bool, error) {
		last = c.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll)
		return called()
	})
	if err != nil {
		return fmt.Errorf("the API server did not call %s within %s (the dry run's answer: %v): %w", what, webhookReadyTimeout, last, err)
	}
	return nil
}

// uninstallWebhooks deletes the configurations and stops serving them.
func (s *scenarioRun) uninstallWebhooks(ctx context.Context) error {
	if s.webhookServer == nil {
		return nil
	}
	var errs []error
	for _, h := range s.webhooks {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		cfg.Name = h.Name
		if err := client.IgnoreNotFound(s.cluster.Client().Delete(ctx, cfg)); err != nil {
			errs = append(errs, err)
		}
		s.webhookServer.Unregister(h)
	}
	return errors.Join(errs...)
}

// holding checks that the hold of the webhook of a name holds a request:
// its gate (holdGates).
func (s *scenarioRun) holding(name string) string {
	if s.gateServer == nil {
		return fmt.Sprintf("webhook %s holds nothing: its hold is not installed", name)
	}
	gateName := s.gateName(name + holdSuffix)
	if len(s.gateServer.Holding(gateName)) > 0 {
		return ""
	}
	return fmt.Sprintf("webhook %s holds no request; %s", name, s.heldSoFar(gateName))
}

// webhookEntries are the timeline entries of the webhooks' calls so far,
// each in the lane of the webhook's name as the scenario gives it.
func (s *scenarioRun) webhookEntries() []results.TimelineEntry {
	if s.webhookServer == nil {
		return nil
	}
	var out []results.TimelineEntry
	for i, h := range s.webhooks {
		lane := s.sc.Spec.Webhooks[i].Name
		for _, c := range s.webhookServer.Calls(h) {
			what := "its entry was there as it writes it: no change"
			switch {
			case c.Added:
				what = "added its entry"
			case c.Changed:
				what = "replaced its entry"
			case h.Manager == "":
				what = "no change"
			}
			e := results.TimelineEntry{
				At:      c.At,
				Lane:    lane,
				Kind:    results.EntryWebhookCall,
				Object:  c.Object,
				Summary: fmt.Sprintf("webhook %s called on %s of %s: %s", lane, c.Operation, c.Object, what),
			}
			if c.Changed {
				entry, _ := json.Marshal(map[string]any{"manager": h.Manager, "trainingRuntimeSpec": h.Entry})
				e.Detail = "the entry it wrote: " + string(entry)
			}
			out = append(out, e)
		}
	}
	return out
}
