package envtest

import (
	"github.com/trainersim/trainersim/sim/webhooks"
)

// ServeWebhooks is cluster.WebhookServing: the server starts with the first call
// and stops with the environment.
func (e *Environment) ServeWebhooks() (*webhooks.Server, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.webhooks == nil {
		hooks := &e.env.WebhookInstallOptions
		s, err := webhooks.NewServer(hooks.LocalServingHost, hooks.LocalServingCertDir, hooks.LocalServingCAData)
		if err != nil {
			return nil, err
		}
		e.webhooks = s
	}
	return e.webhooks, nil
}
