package envtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/internal/controlplane"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/startup"
	"github.com/trainersim/trainersim/sim/view"
)

// The API server and etcd, through envtest, and the kubeconfigs of the
// users the other components run as.

func (e *Environment) startAPIServer(bins map[string]string) error {
	since := e.now()
	binDir := filepath.Join(e.WorkDir, "bin")
	apiserver, protected, err := proc.WrapWithParentDeathSignal(binDir, assets.APIServer, bins[assets.APIServer])
	if err != nil {
		return err
	}
	etcd, _, err := proc.WrapWithParentDeathSignal(binDir, assets.Etcd, bins[assets.Etcd])
	if err != nil {
		return err
	}
	e.parentDeathProtected = protected
	e.env = &envtest.Environment{ControlPlaneStartTimeout: time.Minute, ControlPlaneStopTimeout: startup.StopGrace}
	for flag, values := range apiServerFlags {
		e.env.ControlPlane.GetAPIServer().Configure().Append(flag, values...)
	}
	audit, err := e.auditFlags()
	if err != nil {
		return err
	}
	for flag, values := range audit {
		e.env.ControlPlane.GetAPIServer().Configure().Append(flag, values...)
	}
	for _, flag := range apiServerDroppedDefaults {
		e.env.ControlPlane.GetAPIServer().Configure().Disable(flag)
	}
	// Their state lives in the work dir, so that it goes with it.
	e.env.ControlPlane.GetAPIServer().Path = apiserver
	e.env.ControlPlane.GetAPIServer().CertDir = filepath.Join(e.WorkDir, "kube-apiserver-certs")
	e.env.ControlPlane.Etcd = &envtest.Etcd{Path: etcd, DataDir: filepath.Join(e.WorkDir, "etcd")}
	if err := e.reservePorts(); err != nil {
		return err
	}
	cfg, err := e.env.Start()
	if err != nil {
		return fmt.Errorf("failed to start kube-apiserver and etcd: %w", err)
	}
	if err := e.moveServingCerts(); err != nil {
		return err
	}
	e.cfg = cfg
	e.cfg.QPS, e.cfg.Burst = 200, 400
	e.ready(StepAPIServer, since)
	return nil
}

// moveServingCerts moves the webhooks' serving certificates, which envtest
// writes to a temporary directory of its own, into the work dir, before
// anything reads them: there they go with it, also when a SIGKILL leaves
// the work dir to the next start (startup.RemoveStaleWorkDirs). envtest's
// Stop removes them wherever LocalServingCertDir says.
func (e *Environment) moveServingCerts() error {
	hooks := &e.env.WebhookInstallOptions
	to := filepath.Join(e.WorkDir, "webhook-serving-certs")
	if err := os.Rename(hooks.LocalServingCertDir, to); err != nil {
		// Another file system: copied with each file's mode (the key
		// stays its owner's), then removed.
		err := copyTree(hooks.LocalServingCertDir, to)
		if err == nil {
			err = os.RemoveAll(hooks.LocalServingCertDir)
		}
		if err != nil {
			return fmt.Errorf("failed to move the webhooks' serving certificates into the work dir: %w", err)
		}
	}
	hooks.LocalServingCertDir = to
	return nil
}

// adminKubeconfig writes a kubeconfig of an administrator (a user in
// system:masters): the harness's own, and a kept cluster's for kubectl.
func (e *Environment) adminKubeconfig(user, path string) error {
	return e.writeKubeconfig(envtest.User{Name: user, Groups: []string{"system:masters"}}, path)
}

// componentKubeconfig writes a kubeconfig of a component's identity.
func (e *Environment) componentKubeconfig(component, path string) error {
	id, ok := identity.Of(component)
	if !ok {
		return fmt.Errorf("no identity for component %s", component)
	}
	if e.views != nil && (slices.Contains(e.Views, component) || component == identity.JobSet && slices.Contains(e.Views, identity.Trainer)) {
		return e.viewedKubeconfig(component, path)
	}
	return e.writeKubeconfig(envtest.User{Name: id.User, Groups: id.Groups}, path)
}

// viewedKubeconfig writes the kubeconfig of a component that runs as a
// process on a run with views: its identity, the address of its proxy
// (sim/view), started on the first call and kept for the cluster's life.
func (e *Environment) viewedKubeconfig(component, path string) error {
	// Under e.mu throughout: two starts of the component side by side
	// share one proxy (and one identity).
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.proxies[component]
	if p == nil {
		cfg, err := e.componentConfig(component)
		if err != nil {
			return err
		}
		if p, err = e.views.Serve(component, cfg); err != nil {
			return err
		}
		if e.proxies == nil {
			e.proxies = map[string]*view.Proxy{}
		}
		e.proxies[component] = p
	}
	return writeRestKubeconfig(component, p.Kubeconfig(), path)
}

// writeRestKubeconfig writes a rest.Config of a user as a kubeconfig.
func writeRestKubeconfig(user string, cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["default"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: user}
	kc.CurrentContext = "default"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("failed to render kubeconfig of %s: %w", user, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("failed to create kubeconfig dir: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("failed to write kubeconfig %s: %w", path, err)
	}
	return nil
}

// componentConfig is the rest.Config of a component's identity, for one
// that runs in this process.
func (e *Environment) componentConfig(component string) (*rest.Config, error) {
	id, ok := identity.Of(component)
	if !ok {
		return nil, fmt.Errorf("no identity for component %s", component)
	}
	u, err := e.addUser(envtest.User{Name: id.User, Groups: id.Groups})
	if err != nil {
		return nil, err
	}
	cfg := u.Config()
	cfg.QPS, cfg.Burst = e.cfg.QPS, e.cfg.Burst
	return cfg, nil
}

// addUser gives the API server a user (a client certificate).
func (e *Environment) addUser(user envtest.User) (*envtest.AuthenticatedUser, error) {
	e.usersMu.Lock()
	defer e.usersMu.Unlock()
	u, err := e.env.AddUser(user, nil)
	if err != nil {
		return nil, fmt.Errorf("failed to add user %s: %w", user.Name, err)
	}
	return u, nil
}

// writeKubeconfig writes a kubeconfig of user.
func (e *Environment) writeKubeconfig(user envtest.User, path string) error {
	u, err := e.addUser(user)
	if err != nil {
		return err
	}
	data, err := u.KubeConfig()
	if err != nil {
		return fmt.Errorf("failed to render kubeconfig of %s: %w", user.Name, err)
	}
	return writeKubeconfigFile(path, data)
}

// writeKubeconfigFile writes a kubeconfig, its directory made first.
func writeKubeconfigFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("failed to create kubeconfig dir: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("failed to write kubeconfig %s: %w", path, err)
	}
	return nil
}

// reservePorts gives the API server, etcd (its client and peer ports) and
// the webhook server (where the Trainer's manager serves) ports of
// controlplane.FreePort: below the kernel's ephemeral range and reserved
// among trainersim's processes. envtest would take ports the kernel gave
// it (a listen on :0, closed at once), and until the process binds one,
// any outgoing connection can get it as its local port: CI saw the
// Trainer's manager fail with "bind: address already in use" on such a
// port.
func (e *Environment) reservePorts() error {
	ports := make([]int, 4)
	for i := range ports {
		port, err := controlplane.FreePort()
		if err != nil {
			return err
		}
		ports[i] = port
	}
	const host = "127.0.0.1"
	url := func(port int) *url.URL {
		return &url.URL{Scheme: "http", Host: net.JoinHostPort(host, strconv.Itoa(port))}
	}
	api := e.env.ControlPlane.GetAPIServer()
	api.SecureServing.Address, api.SecureServing.Port = host, strconv.Itoa(ports[0])
	e.env.ControlPlane.Etcd.URL = url(ports[1])
	e.env.ControlPlane.Etcd.Configure().Set("listen-peer-urls", url(ports[2]).String())
	hooks := &e.env.WebhookInstallOptions
	hooks.LocalServingHost, hooks.LocalServingPort = host, ports[3]
	return nil
}
