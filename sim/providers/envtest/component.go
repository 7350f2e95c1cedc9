package envtest

// The child processes of an envtest cluster: the control-plane components
// (sim/internal/controlplane) and other releases' Trainer and JobSet
// managers, each with a kubeconfig of its own and its log in logs/.

import (
	"context"
	"path/filepath"

	"github.com/trainersim/trainersim/sim/internal/controlplane"
	"github.com/trainersim/trainersim/sim/internal/proc"
)

// startComponent starts a kube control-plane component as the identity of
// its name, makes Stop stop it, and records its readiness.
func (e *Environment) startComponent(ctx context.Context, c controlplane.KubeComponent) error {
	since := e.now()
	c.Kubeconfig = filepath.Join(e.WorkDir, c.Name+".kubeconfig")
	if err := e.componentKubeconfig(c.Name, c.Kubeconfig); err != nil {
		return err
	}
	p, err := c.Start(ctx)
	if p != nil {
		e.trackProcess(p)
	}
	if err != nil {
		return err
	}
	e.ready(c.Name, since)
	return nil
}

// startProcess starts the child process of a name that cmd describes,
// given the path of a kubeconfig of its own (the identity of component) for
// its arguments or environment to name; its log is logs/<name>.log, and Stop
// stops it.
func (e *Environment) startProcess(name, component string, cmd func(kubeconfig string) *proc.Process) (*proc.Process, error) {
	kubeconfig := filepath.Join(e.WorkDir, name+".kubeconfig")
	if err := e.componentKubeconfig(component, kubeconfig); err != nil {
		return nil, err
	}
	p := cmd(kubeconfig)
	p.LogPath = filepath.Join(e.LogDir(), name+".log")
	if err := p.Start(); err != nil {
		return nil, err
	}
	e.trackProcess(p)
	return p, nil
}

// trackProcess makes Stop stop a started child process.
func (e *Environment) trackProcess(p *proc.Process) {
	e.mu.Lock()
	e.processes = append(e.processes, p)
	e.mu.Unlock()
}
