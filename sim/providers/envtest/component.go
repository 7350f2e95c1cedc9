package envtest

// The child processes of an envtest cluster: the control-plane components
// (sim/internal/controlplane) and other releases' Trainer and JobSet
// managers, each with a kubeconfig of its own and its log in logs/.

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/trainersim/trainersim/sim/internal/controlplane"
	"github.com/trainersim/trainersim/sim/internal/proc"
)

// startComponent starts a kube control-plane component as the identity of
// its name, makes Stop stop it, and records its readiness. It is a
// process component: crashed, stopped and started again like Kueue, its
// nth start's log and certificates named <name>-<n>.
func (e *Environment) startComponent(ctx context.Context, c controlplane.KubeComponent) error {
	since := e.now()
	c.Kubeconfig = filepath.Join(e.WorkDir, c.Name+".kubeconfig")
	if err := e.componentKubeconfig(c.Name, c.Kubeconfig); err != nil {
		return err
	}
	var healthy func(context.Context) error
	pc := &processComponent{
		component: c.Name,
		start: func(n int) (*proc.Process, error) {
			k := c
			if n > 0 {
				k.Name = fmt.Sprintf("%s-%d", c.Name, n)
			}
			p, check, err := k.Launch()
			if err != nil {
				return nil, err
			}
			e.trackProcess(p)
			healthy = check
			return p, nil
		},
		ready: func(ctx context.Context) error { return healthy(ctx) },
	}
	if err := pc.run(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	e.processComponents = append(e.processComponents, pc)
	e.mu.Unlock()
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
