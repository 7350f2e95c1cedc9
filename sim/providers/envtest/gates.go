package envtest

import (
	"github.com/trainersim/trainersim/sim/gate"
)

// ServeGates is cluster.GateServing: the server starts with the first call, on
// envtest's serving host and certificate, and stops with the environment.
func (e *Environment) ServeGates() (*gate.Server, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gates == nil {
		hooks := &e.env.WebhookInstallOptions
		s, err := gate.NewServer(hooks.LocalServingHost, hooks.LocalServingCertDir, hooks.LocalServingCAData)
		if err != nil {
			return nil, err
		}
		e.gates = s
	}
	return e.gates, nil
}
