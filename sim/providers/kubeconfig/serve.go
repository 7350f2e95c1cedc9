package kubeconfig

// Serving scenario webhooks and gates to a cluster simctl did not start in
// its process: a kind cluster's API server runs in a container and reaches
// this machine at the Docker network's gateway, not at loopback; a cluster
// kept by `simctl up` reaches loopback; a remote cluster may reach nothing
// here. The first use finds an address of this machine that the cluster's
// API server reaches, by registering a probe webhook served there and
// sending a server-side dry run through it, and serves the scenarios'
// webhooks and gates at that address with a certificate of its own. With
// Kubeconfig.Serve, Start does so at preflight and fails there when no
// address is reachable, rather than a scenario waiting on a webhook the
// API server cannot call.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/gate"
	"github.com/trainersim/trainersim/sim/webhooks"
)

// StepServe is the start step that finds where the cluster reaches this
// machine (Kubeconfig.Serve).
const StepServe = "webhook-serving"

// Timing of the probe.
const (
	// probeWebhookTimeout is the probe webhook's timeoutSeconds: how long
	// the API server tries an address before it reports it unreachable.
	probeWebhookTimeout = 3
	probePoll           = 100 * time.Millisecond
	// probeTimeout bounds the wait for the API server to use the probe
	// webhook at one address.
	probeTimeout = 30 * time.Second
)

// ErrUnreachable is the finding of a cluster whose API server reaches no
// address of this machine where simctl would serve webhooks.
var ErrUnreachable = errors.New("the cluster's API server reaches no address of this machine where simctl would serve the scenarios' webhooks and gates: give --serve-host an address of this machine it reaches, or run those scenarios on a cluster simctl starts")

// serving is where webhooks and gates are served, once found.
type serving struct {
	mu   sync.Mutex
	done bool
	err  error
	host string
	dir  string // the certificate's directory, removed by close
	ca   []byte
	hook *webhooks.Server
	gate *gate.Server
}

var (
	_ cluster.WebhookServing = (*Kubeconfig)(nil)
	_ cluster.GateServing    = (*Kubeconfig)(nil)
)

// ServeWebhooks is cluster.WebhookServing: the server starts with the first
// call, at the address the cluster reaches, and stops with Stop.
func (k *Kubeconfig) ServeWebhooks() (*webhooks.Server, error) {
	s := &k.serving
	if err := k.findServeHost(context.Background()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hook == nil {
		h, err := webhooks.NewServer(s.host, s.dir, s.ca)
		if err != nil {
			return nil, err
		}
		s.hook = h
	}
	return s.hook, nil
}

// ServeGates is cluster.GateServing, as ServeWebhooks.
func (k *Kubeconfig) ServeGates() (*gate.Server, error) {
	s := &k.serving
	if err := k.findServeHost(context.Background()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate == nil {
		g, err := gate.NewServer(s.host, s.dir, s.ca)
		if err != nil {
			return nil, err
		}
		s.gate = g
	}
	return s.gate, nil
}

// findServeHost finds, once, the address to serve at: ServeHost when given
// (checked all the same), else loopback, else each IPv4 address of this
// machine's interfaces, the first the API server reaches. Its finding,
// found or not, stays for the run.
func (k *Kubeconfig) findServeHost(ctx context.Context) error {
	s := &k.serving
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return s.err
	}
	s.done = true
	candidates := []string{k.ServeHost}
	if k.ServeHost == "" {
		candidates = localAddresses()
	}
	var tried []string
	for _, host := range candidates {
		dir, err := os.MkdirTemp("", "trainersim-serving-")
		if err != nil {
			s.err = err
			return err
		}
		ca, err := gate.WriteServingCert(dir, host)
		if err == nil {
			err = k.probe(ctx, host, dir, ca)
		}
		if err == nil {
			s.host, s.dir, s.ca = host, dir, ca
			return nil
		}
		_ = os.RemoveAll(dir)
		var miss *unreachableError
		if !errors.As(err, &miss) {
			s.err = fmt.Errorf("failed to find where the cluster reaches this machine: %w", err)
			return s.err
		}
		tried = append(tried, host+": "+miss.why)
	}
	problem := fmt.Sprintf("%v (tried %s)", ErrUnreachable, strings.Join(tried, "; "))
	if k.ServeHost != "" {
		problem = fmt.Sprintf("the cluster's API server cannot reach --serve-host %s, where simctl would serve the scenarios' webhooks and gates (%s): give an address of this machine it reaches, or leave --serve-host out for simctl to look", k.ServeHost, strings.Join(tried, "; "))
	}
	s.err = &PreflightError{Server: k.cfg.Host, Problems: []string{problem}}
	return s.err
}

// unreachableError is a probe's finding that the API server cannot call
// an address.
type unreachableError struct{ why string }

func (e *unreachableError) Error() string { return e.why }

// probe serves a webhook at host and sends a server-side dry run of a
// ConfigMap through it: the API server calling it proves the address; the
// API server failing to call it (connection refused, a timeout), an
// *unreachableError. Until the API server has taken the probe's
// configuration in, the dry run passes without a call, and probe sends it
// again.
func (k *Kubeconfig) probe(ctx context.Context, host, dir string, ca []byte) error {
	token := make([]byte, 4)
	_, _ = rand.Read(token)
	name := "trainersim-serve-probe-" + hex.EncodeToString(token)
	called := make(chan struct{}, 1)
	ep, err := gate.Serve(host, dir, ca, gate.Admission(func(_ context.Context, _ string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		select {
		case called <- struct{}{}:
		default:
		}
		return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	}))
	if err != nil {
		return &unreachableError{why: err.Error()}
	}
	defer ep.Close()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "serve-probe.trainersim.dev",
			ClientConfig:            ep.ClientConfig("/probe"),
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"trainersim.dev/serve-probe": name}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(probeWebhookTimeout)),
		}},
	}
	if err := k.client.Create(ctx, cfg); err != nil {
		return fmt.Errorf("failed to create the probe webhook configuration %s: %w", name, err)
	}
	defer func() {
		// Not the probe's context: a cancelled run deletes it all the same.
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.IgnoreNotFound(k.client.Delete(dctx, cfg))
	}()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: metav1.NamespaceDefault,
		Labels: map[string]string{"trainersim.dev/serve-probe": name},
	}}
	var refused error
	err = wait.PollUntilContextTimeout(ctx, probePoll, probeTimeout, true, func(ctx context.Context) (bool, error) {
		err := k.client.Create(ctx, cm.DeepCopy(), client.DryRunAll)
		select {
		case <-called:
			return true, nil
		default:
		}
		switch {
		case err == nil:
			return false, nil // the configuration is not in use yet
		case strings.Contains(err.Error(), "serve-probe.trainersim.dev"):
			refused = err
			return true, nil
		}
		return false, fmt.Errorf("failed to send the probe's dry run: %w", err)
	})
	switch {
	case refused != nil:
		return &unreachableError{why: refused.Error()}
	case wait.Interrupted(err):
		return &unreachableError{why: fmt.Sprintf("the API server did not call the probe webhook within %s", probeTimeout)}
	}
	return err
}

// localAddresses are the candidates to serve at: loopback first, then the
// IPv4 address of every interface that is up, those of bridges (Docker's
// networks, where kind's nodes are) before the others.
func localAddresses() []string {
	out := []string{"127.0.0.1"}
	ifaces, err := net.Interfaces()
	if err != nil {
		return out
	}
	var bridges, others []string
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.To4() == nil {
				continue
			}
			if isBridge(iface.Name) {
				bridges = append(bridges, n.IP.String())
			} else {
				others = append(others, n.IP.String())
			}
		}
	}
	return append(append(out, bridges...), others...)
}

// isBridge reports whether an interface is a Linux bridge (Docker names
// its networks' br-<id> and docker0).
func isBridge(name string) bool {
	if _, err := os.Stat(filepath.Join("/sys/class/net", name, "bridge")); err == nil {
		return true
	}
	return strings.HasPrefix(name, "br-") || name == "docker0"
}

// close stops the servers and removes the certificate.
func (s *serving) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.hook != nil {
		errs = append(errs, s.hook.Close())
		s.hook = nil
	}
	if s.gate != nil {
		errs = append(errs, s.gate.Close())
		s.gate = nil
	}
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
		s.dir = ""
	}
	return errors.Join(errs...)
}
