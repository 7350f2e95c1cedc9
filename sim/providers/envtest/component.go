package envtest

// What the control-plane components the harness runs as child processes
// (kube-controller-manager, kube-scheduler) share: a loopback port, a
// kubeconfig of their own, and a /healthz over HTTPS that says when they
// are ready, while their process is watched for an early exit.

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
	"time"

	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/startup"
)

// freePort returns a free loopback port for a component to listen on,
// below the kernel's ephemeral range. A port the kernel hands out for
// 127.0.0.1:0 comes from that range, from which it also picks the local
// port of every outgoing connection: between the check and the
// component's bind, one of the many connections of a run (or of another
// test process) took such a port, and kube-controller-manager failed with
// "address already in use". Below the range, only a listener can take it.
func freePort() (int, error) {
	low, high := portsBelowEphemeral()
	for range 200 {
		port := low + rand.IntN(high-low)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use: another
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("failed to find a free port in %d-%d", low, high-1)
}

// portsBelowEphemeral is the range freePort picks from: the 10000 ports
// below the kernel's ephemeral range (net.ipv4.ip_local_port_range; its
// Linux default starts at 32768).
func portsBelowEphemeral() (low, high int) {
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

// startComponent starts a kube component that serves /healthz over HTTPS on
// a loopback port and waits until it answers ok.
func (e *Environment) startComponent(ctx context.Context, name, bin string, args func(kubeconfig string, port int, certDir string) []string) error {
	since := e.now()
	port, err := freePort()
	if err != nil {
		return err
	}
	certDir := filepath.Join(e.WorkDir, name+"-certs")
	p, err := e.startProcess(name, name, func(kubeconfig string) *proc.Process {
		return &proc.Process{Name: name, Path: bin, Args: args(kubeconfig, port, certDir)}
	})
	if err != nil {
		return err
	}
	healthz := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	httpClient := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := p.WaitUntil(ctx, startup.PollInterval, func(ctx context.Context) error { return checkHealthz(ctx, httpClient, healthz) }); err != nil {
		return err
	}
	e.ready(name, since)
	return nil
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

// componentArgs are the flags kube-controller-manager and kube-scheduler
// share: the harness's kubeconfig for the API and for delegated authn/authz,
// serving on a loopback port with a self-signed certificate, no leader
// election.
func componentArgs(kubeconfig string, port int, certDir string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--authentication-skip-lookup=true",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--leader-elect=false",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}
}
