package sim

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
)

// The kwok lease's place and timing.
const (
	kwokLeaseNamespace = "kube-system"
	kwokLeaseName      = "trainersim-kwok"
	// kwokLeaseDuration is how long the lease holds without renewal; it is
	// renewed every quarter of it.
	kwokLeaseDuration = 40 * time.Second
)

// Annotations of the kwok lease.
const (
	annotationCluster = "trainersim.dev/cluster"
	annotationTrainer = "trainersim.dev/trainer-version"
	annotationJobSet  = "trainersim.dev/jobset-version"
)

// kwokLease is a held kwok lease.
type kwokLease struct {
	client client.Client
	clock  clock.PassiveClock
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	// lapsed is the renewal error after which the lease went a whole
	// duration unrenewed, so that other runs could take the kwok for gone;
	// release reports it.
	lapsed error
}

// liveKwokLease returns the kwok lease when one is held and not expired.
func liveKwokLease(ctx context.Context, c client.Client, clk clock.PassiveClock) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: kwokLeaseNamespace, Name: kwokLeaseName}, l); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get lease %s/%s: %w", kwokLeaseNamespace, kwokLeaseName, err)
	}
	if leaseExpired(l, clk.Now()) {
		return nil, nil
	}
	return l, nil
}

func leaseExpired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// holdKwokLease takes the kwok lease (an expired one is taken over) and
// renews it until release.
func holdKwokLease(ctx context.Context, c client.Client, clk clock.PassiveClock, v Versions, labels map[string]string) (*kwokLease, error) {
	host, _ := os.Hostname()
	now := metav1.NewMicroTime(clk.Now())
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: kwokLeaseNamespace,
			Name:      kwokLeaseName,
			Labels:    map[string]string{ManagedByLabel: ManagedByValue},
			Annotations: map[string]string{
				annotationCluster: v.Cluster,
				annotationTrainer: v.Trainer,
				annotationJobSet:  v.JobSet,
			},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(fmt.Sprintf("simctl pid %d on %s", os.Getpid(), host)),
			LeaseDurationSeconds: ptr.To(int32(kwokLeaseDuration / time.Second)),
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
			return nil, fmt.Errorf("failed to get lease %s: %w", kwokLeaseName, err)
		}
		if !leaseExpired(old, clk.Now()) {
			return nil, fmt.Errorf("lease %s/%s is held by %s", kwokLeaseNamespace, kwokLeaseName, ptr.Deref(old.Spec.HolderIdentity, "?"))
		}
		l.ResourceVersion = old.ResourceVersion
		err = c.Update(ctx, l)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to take lease %s/%s: %w", kwokLeaseNamespace, kwokLeaseName, err)
	}
	h := &kwokLease{client: c, clock: clk, stop: make(chan struct{}), done: make(chan struct{})}
	go h.renew(l)
	return h, nil
}

// renew renews the lease every quarter of its duration until stopped. A
// failed renewal is tried again at the next tick; once the lease has gone a
// whole duration unrenewed, the error is kept for release to report.
func (h *kwokLease) renew(l *coordinationv1.Lease) {
	defer close(h.done)
	t := time.NewTicker(kwokLeaseDuration / 4)
	defer t.Stop()
	renewed := h.clock.Now()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), kwokLeaseDuration/4)
			patch := client.MergeFrom(l.DeepCopy())
			now := h.clock.Now()
			l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(now))
			err := h.client.Patch(ctx, l, patch)
			cancel()
			switch {
			case err == nil:
				renewed = now
			case h.lapsed == nil && now.Sub(renewed) >= kwokLeaseDuration:
				h.lapsed = fmt.Errorf("the kwok lease %s/%s lapsed, unrenewed since %s: another run may have started a second kwok: %w",
					kwokLeaseNamespace, kwokLeaseName, renewed.Format(time.RFC3339), err)
			}
		}
	}
}

// release stops renewing and deletes the lease.
func (h *kwokLease) release(ctx context.Context) error {
	if h == nil {
		return nil
	}
	h.once.Do(func() { close(h.stop) })
	<-h.done
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: kwokLeaseNamespace, Name: kwokLeaseName}}
	if err := h.client.Delete(ctx, l); err != nil && !apierrors.IsNotFound(err) {
		return errors.Join(h.lapsed, fmt.Errorf("failed to delete lease %s/%s: %w", kwokLeaseNamespace, kwokLeaseName, err))
	}
	return h.lapsed
}
