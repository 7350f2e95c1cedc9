// Package kwok runs KWOK, the simulated kubelet of every trainersim node,
// and keeps its nodes: KWOK as a child process (process.go) or as the
// Deployment a kind cluster runs (deployment.go), the lease by which runs
// against one cluster share one KWOK (lease.go), and the pool of simulated
// nodes it makes Ready (nodes.go).
package kwok

// The kwok lease: whoever runs a kwok for trainersim's nodes (simctl up, or
// a run against an existing cluster) holds a Lease and renews it, so that a
// later run against the same cluster finds a live kwok to reuse instead of
// starting a second one for the same nodes. Its annotations also say which
// Trainer and JobSet run, for clusters that run them in no Deployment.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/sim/cluster"
)

// The kwok lease's place and timing.
const (
	LeaseNamespace = "kube-system"
	LeaseName      = "trainersim-kwok"
	// leaseDuration is how long the lease holds without renewal; it is
	// renewed every quarter of it.
	leaseDuration = 40 * time.Second
)

// Annotations of the kwok lease.
const (
	AnnotationCluster = "trainersim.dev/cluster"
	AnnotationTrainer = "trainersim.dev/trainer-version"
	AnnotationJobSet  = "trainersim.dev/jobset-version"
)

// Lease is a held kwok lease.
type Lease struct {
	client client.Client
	clock  clock.PassiveClock
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	// lapsed is the renewal error after which the lease went a whole
	// duration unrenewed, so that other runs could take the kwok for gone;
	// Release reports it.
	lapsed error
}

// LiveLease returns the kwok lease when one is held and not expired.
func LiveLease(ctx context.Context, c client.Client, clk clock.PassiveClock) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: LeaseNamespace, Name: LeaseName}, l); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get lease %s/%s: %w", LeaseNamespace, LeaseName, err)
	}
	if LeaseExpired(l, clk.Now()) {
		return nil, nil
	}
	return l, nil
}

func LeaseExpired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// HoldLease takes the kwok lease (an expired one is taken over) and
// renews it until Release.
func HoldLease(ctx context.Context, c client.Client, clk clock.PassiveClock, v cluster.Versions, labels map[string]string) (*Lease, error) {
	host, _ := os.Hostname()
	now := metav1.NewMicroTime(clk.Now())
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: LeaseNamespace,
			Name:      LeaseName,
			Labels:    map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue},
			Annotations: map[string]string{
				AnnotationCluster: v.Cluster,
				AnnotationTrainer: v.Trainer,
				AnnotationJobSet:  v.JobSet,
			},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(fmt.Sprintf("simctl pid %d on %s", os.Getpid(), host)),
			LeaseDurationSeconds: ptr.To(int32(leaseDuration / time.Second)),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
	for k, v := range labels {
		l.Labels[k] = v
	}
	err := c.Create(ctx, l)
	if apierrors.IsAlreadyExists(err) {
		old := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(l), old); err != nil {
			return nil, fmt.Errorf("failed to get lease %s: %w", LeaseName, err)
		}
		if !LeaseExpired(old, clk.Now()) {
			return nil, fmt.Errorf("lease %s/%s is held by %s", LeaseNamespace, LeaseName, ptr.Deref(old.Spec.HolderIdentity, "?"))
		}
		l.ResourceVersion = old.ResourceVersion
		err = c.Update(ctx, l)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to take lease %s/%s: %w", LeaseNamespace, LeaseName, err)
	}
	h := &Lease{client: c, clock: clk, stop: make(chan struct{}), done: make(chan struct{})}
	go h.renew(l)
	return h, nil
}

// renew renews the lease every quarter of its duration until stopped. A
// failed renewal is tried again at the next tick; once the lease has gone a
// whole duration unrenewed, the error is kept for Release to report.
func (h *Lease) renew(l *coordinationv1.Lease) {
	defer close(h.done)
	t := time.NewTicker(leaseDuration / 4)
	defer t.Stop()
	renewed := h.clock.Now()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), leaseDuration/4)
			patch := client.MergeFrom(l.DeepCopy())
			now := h.clock.Now()
			l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(now))
			err := h.client.Patch(ctx, l, patch)
			cancel()
			switch {
			case err == nil:
				renewed = now
			case h.lapsed == nil && now.Sub(renewed) >= leaseDuration:
				h.lapsed = fmt.Errorf("the kwok lease %s/%s lapsed, unrenewed since %s: another run may have started a second kwok: %w",
					LeaseNamespace, LeaseName, renewed.Format(time.RFC3339), err)
			}
		}
	}
}

// Release stops renewing and deletes the lease.
func (h *Lease) Release(ctx context.Context) error {
	if h == nil {
		return nil
	}
	h.once.Do(func() { close(h.stop) })
	<-h.done
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: LeaseNamespace, Name: LeaseName}}
	if err := h.client.Delete(ctx, l); err != nil && !apierrors.IsNotFound(err) {
		return errors.Join(h.lapsed, fmt.Errorf("failed to delete lease %s/%s: %w", LeaseNamespace, LeaseName, err))
	}
	return h.lapsed
}
