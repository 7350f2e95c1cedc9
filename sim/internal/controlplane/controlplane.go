// Package controlplane holds the Kubernetes control-plane components the
// envtest provider runs as processes of their own, besides envtest's API
// server and etcd: kube-controller-manager and kube-scheduler. Each is a
// KubeComponent over one process type (sim/internal/proc): a loopback port
// below the kernel's ephemeral range, a kubeconfig of its own (the
// identity it acts as), and a /healthz over HTTPS that says when it is
// ready, while its process is watched for an early exit.
package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/startup"
)

// Names of the components, as their logs and start steps are named.
const (
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
)

// KubeComponent is a kube control-plane component run as a child process.
type KubeComponent struct {
	// Name is the component's name: its log is LogDir/<Name>.log and its
	// self-signed serving certificate goes to WorkDir/<Name>-certs.
	Name string
	// Binary is the path of its executable.
	Binary string
	// Kubeconfig is the identity it acts as, for the API and for
	// delegated authentication and authorization.
	Kubeconfig string
	// WorkDir and LogDir are the cluster's work and log directories.
	WorkDir, LogDir string
	// Args are its own flags, after those every component gets.
	Args []string
}

// Start starts the component on a free loopback port and waits, within
// ctx, until its /healthz answers ok. A process that exits before says so,
// with the end of its log.
func (c KubeComponent) Start(ctx context.Context) (*proc.Process, error) {
	p, healthy, err := c.Launch()
	if err != nil {
		return nil, err
	}
	if err := p.WaitUntil(ctx, startup.PollInterval, healthy); err != nil {
		return p, err
	}
	return p, nil
}

// Launch starts the component on a free loopback port and returns its
// process and the check that its /healthz answers ok, without waiting.
func (c KubeComponent) Launch() (*proc.Process, func(context.Context) error, error) {
	port, err := FreePort()
	if err != nil {
		return nil, nil, err
	}
	p := &proc.Process{
		Name:    c.Name,
		Path:    c.Binary,
		Args:    append(c.commonArgs(port), c.Args...),
		LogPath: filepath.Join(c.LogDir, c.Name+".log"),
	}
	if err := p.Start(); err != nil {
		return nil, nil, err
	}
	healthz := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	httpClient := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return p, func(ctx context.Context) error { return checkHealthz(ctx, httpClient, healthz) }, nil
}

// commonArgs are the flags kube-controller-manager and kube-scheduler
// share: the kubeconfig for the API and for delegated authn/authz,
// serving on a loopback port with a self-signed certificate, no leader
// election.
func (c KubeComponent) commonArgs(port int) []string {
	return []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--authentication-skip-lookup=true",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.WorkDir, c.Name+"-certs"),
		"--leader-elect=false",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}
}

// NewScheduler is kube-scheduler with its defaults; the caller gives it
// its Kubeconfig.
func NewScheduler(binary, workDir, logDir string) KubeComponent {
	return KubeComponent{Name: Scheduler, Binary: binary, WorkDir: workDir, LogDir: logDir}
}

// controllers are the kube-controller-manager controllers
// that a kind cluster runs and that act on a TrainJob's objects on their way
// to Pods and back: the Job and its Pods, the namespace and ServiceAccount,
// quota, storage, disruption budgets and nodes. docs/fidelity.md's table
// names the ones left out and why (they manage objects no scenario creates:
// Deployments, StatefulSets, DaemonSets, CronJobs, Services' endpoints,
// certificates).
var controllers = []string{
	"job-controller",                           // Jobs -> Pods, Job success and failure
	"ttl-after-finished-controller",            // deletes finished Jobs with ttlSecondsAfterFinished
	"garbage-collector-controller",             // TrainJob -> JobSet -> Jobs -> Pods cascade
	"namespace-controller",                     // deleting a namespace deletes its objects
	"serviceaccount-controller",                // the default ServiceAccount of new namespaces
	"serviceaccount-token-controller",          // tokens of ServiceAccount token Secrets
	"root-ca-certificate-publisher-controller", // kube-root-ca.crt, which every Pod's token volume projects
	"resourcequota-controller",                 // a ResourceQuota's usage, which its admission plugin enforces
	"persistentvolume-binder-controller",       // binds claims to volumes, asks the provisioner for new ones
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	"ephemeral-volume-controller",      // the claims of a Pod's generic ephemeral volumes
	"disruption-controller",            // a PodDisruptionBudget's status, which eviction honours
	"node-lifecycle-controller",        // node conditions to taints; clears not-ready once Ready
	"taint-eviction-controller",        // evicts Pods from NoExecute-tainted nodes after tolerationSeconds
	"pod-garbage-collector-controller", // Pods bound to deleted nodes
}

// NewControllerManager is kube-controller-manager running the controllers
// above, each as a ServiceAccount of its own, with the API server's
// ServiceAccount signing key and root CA and the node-monitor grace period
// of hb (zero: fakegpu.FastHeartbeat); the caller gives it its Kubeconfig.
func NewControllerManager(binary, workDir, logDir, serviceAccountKey, rootCA string, hb fakegpu.Heartbeat) KubeComponent {
	return KubeComponent{Name: ControllerManager, Binary: binary, WorkDir: workDir, LogDir: logDir, Args: []string{
		"--controllers=" + strings.Join(controllers, ","),
		// Each controller acts as a ServiceAccount of its own in
		// kube-system, with the bootstrap policy's role, as kubeadm runs
		// it.
		"--use-service-account-credentials=true",
		// The key the API server verifies ServiceAccount tokens with
		// (--service-account-key-file is its public half), as kubeadm
		// passes both sides.
		"--service-account-private-key-file=" + serviceAccountKey,
		"--root-ca-file=" + rootCA,
		// Check node conditions every second, so the not-ready taint goes
		// as soon as KWOK reports a node Ready.
		"--node-monitor-period=1s",
		// A node whose Lease was not renewed for this long is Unknown: 50 s
		// by default, 20 s with the fast heartbeat (fakegpu.Heartbeat).
		"--node-monitor-grace-period=" + hb.OrFast().NodeMonitorGracePeriod.String(),
	}}
}

// FreePort returns a free loopback port for a component to listen on,
// below the kernel's ephemeral range, reserved for this process for
// PortReservation. A port the kernel hands out for 127.0.0.1:0 comes from
// that range, from which it also picks the local port of every outgoing
// connection: between the check and the component's bind, one of the many
// connections of a run took such a port, and kube-controller-manager
// failed with "address already in use". Below the range, only a listener
// can take it; and so that no other FreePort (of this process, or of
// another test process beside it: make test runs packages side by side)
// gives the same port before the component binds it, the port is reserved
// in a directory all of them share (kube-scheduler failed so, once, in a
// clean-clone make test). A port still reserved is not given out, bound
// or not; a component binds its port within seconds, long before its
// reservation ends, and from then on the check finds it in use.
func FreePort() (int, error) {
	return freePort(PortReservations(), time.Now())
}

// PortReservation is how long a port FreePort gave stays reserved.
const PortReservation = 2 * time.Minute

// PortReservations is the directory of FreePort's reservations, one file
// per port, shared by every trainersim process of the user on the machine:
// in the user's cache directory, as the snapshots are (a process's TMPDIR
// is its own; a test gives each child one and checks it is left empty),
// else the temporary directory.
func PortReservations() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "trainersim", "ports")
	}
	return filepath.Join(os.TempDir(), "trainersim-ports")
}

func freePort(dir string, now time.Time) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("failed to reserve a port: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, fmt.Errorf("failed to reserve a port: %w", err)
	}
	defer lock.Close()
	// One reservation at a time on the machine: what follows looks at
	// the reservations and then adds one.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("failed to reserve a port: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file unlocks it too
	reserved := map[int]bool{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("failed to reserve a port: %w", err)
	}
	for _, e := range entries {
		port, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "port-"))
		if err != nil || !strings.HasPrefix(e.Name(), "port-") {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > PortReservation {
			_ = os.Remove(filepath.Join(dir, e.Name())) // ended
			continue
		}
		reserved[port] = true
	}
	low, high := PortsBelowEphemeral()
	n := high - low
	start := rand.IntN(n) // where to start looking: the range in turn from a random port
	for k := range n {
		port := low + (start+k)%n
		if reserved[port] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use: another
		}
		_ = l.Close()
		if err := os.WriteFile(filepath.Join(dir, "port-"+strconv.Itoa(port)), nil, 0o644); err != nil {
			return 0, fmt.Errorf("failed to reserve port %d: %w", port, err)
		}
		return port, nil
	}
	return 0, fmt.Errorf("no port of %d-%d is free and unreserved (reservations: %s)", low, high-1, dir)
}

// PortsBelowEphemeral is the range FreePort picks from: the 10000 ports
// below the kernel's ephemeral range (net.ipv4.ip_local_port_range; its
// Linux default starts at 32768).
func PortsBelowEphemeral() (low, high int) {
	high = 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11024 {
				high = n
			}
		}
	}
	return high - 10000, high
}

func checkHealthz(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
