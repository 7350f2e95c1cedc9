package kwok

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/internal/proc"
)

// Pool creates and deletes simulated nodes, which a kwok makes Ready.
type Pool struct {
	// Client creates the nodes and watches them until they are
	// schedulable.
	Client client.WithWatch
	// Kwok is the kwok process this harness runs, watched while waiting so
	// that its exit fails the wait at once. Nil: a kwok this process does
	// not run (in the cluster, or of another simctl).
	Kwok *proc.Process
	// Labels are added to every node (the run's label).
	Labels map[string]string
}

// Add creates the groups' nodes, registered Ready as a kubelet registers
// its node (fakegpu.Register), and waits until each is schedulable (the
// node-lifecycle controller has taken off the not-ready taint the API
// server's TaintNodesByCondition admission plugin puts on every new node).
// It returns the names of the nodes it created, even on error.
func (p *Pool) Add(ctx context.Context, groups []fakegpu.NodeGroup) ([]string, error) {
	for _, g := range groups {
		if g.Kubelet == fakegpu.KubeletHollow {
			return nil, fmt.Errorf("node group %s: hollow kubelets run on clusters simctl starts with envtest only; this cluster's nodes are KWOK's", g.NamePrefix)
		}
	}
	nodes, err := fakegpu.BuildNodes(groups)
	if err != nil {
		return nil, err
	}
	// Created side by side, a few at a time (a fleet's thousand nodes one
	// by one took 20 s); names keeps the nodes' order.
	names := make([]string, 0, len(nodes))
	created := make([]bool, len(nodes))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(createWorkers)
	now := time.Now()
	for i, n := range nodes {
		for k, v := range p.Labels {
			n.Labels[k] = v
		}
		fakegpu.Register(n, now)
		g.Go(func() error {
			if err := p.Client.Create(gctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("failed to create node %s: %w", n.Name, err)
			}
			created[i] = true
			return nil
		})
	}
	err = g.Wait()
	for i, n := range nodes {
		if created[i] {
			names = append(names, n.Name)
		}
	}
	if err != nil {
		return names, err
	}
	if err := p.WaitSchedulable(ctx, names); err != nil {
		return names, fmt.Errorf("nodes did not become ready: %w", err)
	}
	return names, nil
}

// Remove deletes nodes, side by side, without waiting for them to go; a
// node already gone is no error.
func (p *Pool) Remove(ctx context.Context, names []string) error {
	bg := client.PropagationPolicy(metav1.DeletePropagationBackground)
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			if err := p.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, bg); err != nil && !apierrors.IsNotFound(err) {
				errs[i] = fmt.Errorf("failed to delete node %s: %w", n, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createWorkers is how many node creates Add sends at once.
const createWorkers = 8

// WaitSchedulable waits, node after node, until each named node is
// schedulable (schedulable): it lists the node, and one that is not yet
// (or not registered yet) is watched from there until it is, so that the wait ends with the
// node-lifecycle controller's update rather than at the next poll. A
// kwok this process runs that exits fails the wait at once.
func (p *Pool) WaitSchedulable(ctx context.Context, names []string) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if p.Kwok != nil {
		go func() {
			select {
			case <-p.Kwok.Exited():
				cancel(fmt.Errorf("%w; last log lines:\n%s", p.Kwok.ExitError(), p.Kwok.LogTail(20)))
			case <-ctx.Done():
			}
		}()
	}
	for _, name := range names {
		// Listed rather than read: a node a kubelet registers itself
		// (a hollow one) may not be there yet, and the list's
		// resourceVersion is where its watch starts either way.
		var list corev1.NodeList
		if err := p.Client.List(ctx, &list, client.MatchingFields{"metadata.name": name}); err != nil {
			return errors.Join(err, context.Cause(ctx))
		}
		rv, last := list.ResourceVersion, fmt.Errorf("node %s is not registered yet", name)
		if len(list.Items) == 1 {
			rv, last = list.Items[0].ResourceVersion, schedulable(&list.Items[0])
		}
		if last == nil {
			continue
		}
		watcher, err := p.Client.Watch(ctx, &corev1.NodeList{}, client.MatchingFields{"metadata.name": name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			return fmt.Errorf("failed to watch node %s: %w", name, err)
		}
		for last != nil {
			select {
			case ev, ok := <-watcher.ResultChan():
				if !ok {
					watcher.Stop()
					return fmt.Errorf("the watch of node %s ended: %w", name, last)
				}
				if node, isNode := ev.Object.(*corev1.Node); isNode {
					last = schedulable(node)
				}
			case <-ctx.Done():
				watcher.Stop()
				return fmt.Errorf("%w (%v)", context.Cause(ctx), last)
			}
		}
		watcher.Stop()
	}
	return nil
}

// schedulable says why a node is not yet schedulable (not Ready, or
// carrying the not-ready or unreachable taint); nil once it is.
func schedulable(n *corev1.Node) error {
	if !NodeReady(n) {
		return fmt.Errorf("node %s is not Ready", n.Name)
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return fmt.Errorf("node %s still has taint %s", n.Name, t.Key)
		}
	}
	return nil
}

// NodeReady reports whether a node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
