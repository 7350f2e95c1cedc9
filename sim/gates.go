package sim

import (
	"github.com/trainersim/trainersim/sim/gate"
)

// GateServing is implemented by clusters whose API server can call the
// gates this process serves (Environment): scenarios' spec.gates.
type GateServing interface {
	// ServeGates starts (once) and returns the server of the gates.
	ServeGates() (*gate.Server, error)
}

// ServeGates is GateServing: the server starts with the first call, on
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
