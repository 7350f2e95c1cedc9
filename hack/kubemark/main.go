// Command hollow-node is a hollow kubelet for trainersim's hollow node
// groups (kubelet: hollow): kubemark's hollow node (k8s.io/kubernetes
// cmd/kubemark, morph kubelet) at the Kubernetes release of the control
// plane, the kubelet's own code (pod workers, the volume manager and the
// ConfigMap, Secret, projected and downward API volume plugins, the
// environment's resolution, image pull secrets, node status, its Lease)
// over kubemark's fake container runtime, with changes that make it
// answer as a kubelet does where kubemark does not need to:
//
//   - events go to the API server (kubemark records none: its recorder is
//     a fake), so a scenario sees the kubelet's Failed and FailedMount;
//   - readiness is the kubelet's prober manager's (kubemark's fake one
//     reports every container ready, waiting or not);
//   - the node's CPU and memory are the profile's (kubemark's fake cAdvisor
//     reports 1 core and 3.75 GiB); GPUs are extended resources, as a
//     device plugin registers them;
//   - no kubelet server (kubemark's listens on 0.0.0.0): nothing asks a
//     hollow kubelet for logs, exec or metrics;
//   - the cluster DNS address of a kubeadm cluster (kubemark has none, and
//     its kubelet warns MissingClusterDNS on every Pod);
//   - an init container ends as it starts, exit code 0, as one whose
//     command succeeds at once (kubemark's runtime runs it until the Pod is
//     deleted, and the Pod never gets past initializing).
//
// Its other containers run until deleted: the fake runtime neither pulls
// nor ends them (docs/fidelity.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	"go.opentelemetry.io/otel/trace/noop"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubemark"
)

func main() {
	var (
		kubeconfig, name, labels, taints, extended string
		port, maxPods                              int
		cpu, memory                                string
	)
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the node's identity (system:node:NAME, group system:nodes)")
	flag.StringVar(&name, "name", "", "node name")
	flag.IntVar(&port, "kubelet-port", 10250, "the port the node reports for its kubelet (its server does not run: nothing here asks it for logs, exec or metrics)")
	flag.IntVar(&maxPods, "max-pods", 110, "pods the node takes")
	flag.StringVar(&labels, "node-labels", "", "labels the node registers with: k=v,...")
	flag.StringVar(&taints, "register-with-taints", "", "taints the node registers with: k=v:Effect,...")
	flag.StringVar(&extended, "extended-resources", "", "extended resources in capacity: name=quantity,...")
	flag.StringVar(&cpu, "cpu", "1", "CPU capacity (cores)")
	flag.StringVar(&memory, "memory", "4026531840", "memory capacity")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(kubeconfig, name, port, maxPods, labels, taints, extended, cpu, memory); err != nil {
		fmt.Fprintln(os.Stderr, "hollow-node:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, name string, port, maxPods int, labels, taints, extended, cpu, memory string) error {
	if kubeconfig == "" || name == "" {
		return errors.New("--kubeconfig and --name are required")
	}
	nodeLabels, err := pairs(labels)
	if err != nil {
		return fmt.Errorf("--node-labels: %w", err)
	}
	var registerTaints []v1.Taint
	for _, t := range split(taints) {
		kv, effect, ok := strings.Cut(t, ":")
		k, val, _ := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--register-with-taints: %q is not key[=value]:Effect", t)
		}
		registerTaints = append(registerTaints, v1.Taint{Key: k, Value: val, Effect: v1.TaintEffect(effect)})
	}
	resources, err := pairs(extended)
	if err != nil {
		return fmt.Errorf("--extended-resources: %w", err)
	}
	cores, err := resource.ParseQuantity(cpu)
	if err != nil {
		return fmt.Errorf("--cpu: %w", err)
	}
	mem, err := resource.ParseQuantity(memory)
	if err != nil {
		return fmt.Errorf("--memory: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	config.UserAgent = "hollow-kubelet"
	config.QPS, config.Burst = 50, 100
	client, err := clientset.NewForConfig(config)
	if err != nil {
		return err
	}
	f, c := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{
		NodeName: name, KubeletPort: port, MaxPods: maxPods,
		NodeLabels: nodeLabels, RegisterWithTaints: registerTaints,
	})
	// No server: nothing asks a hollow kubelet for logs, exec or metrics,
	// and a port per node would be one more thing to find free.
	c.EnableServer = false
	// A kind cluster's kubelet has the cluster DNS Service's address
	// (kubeadm's default); without one the kubelet warns MissingClusterDNS
	// on every Pod of dnsPolicy ClusterFirst, which no cluster shows.
	c.ClusterDNS = []string{"10.96.0.10"}
	c.ClusterDomain = "cluster.local"
	// The Lease every 10 s and the status every 10 s as a kubelet's
	// defaults; the heartbeat's client times out as kubemark's does.
	heartbeatConfig := *config
	heartbeatConfig.Timeout = min(c.NodeStatusUpdateFrequency.Duration, time.Duration(c.NodeLeaseDurationSeconds)*time.Second)
	heartbeatConfig.QPS = -1
	heartbeatClient, err := clientset.NewForConfig(&heartbeatConfig)
	if err != nil {
		return err
	}
	containerManager := cm.NewStubContainerManager()
	if len(resources) > 0 {
		list := v1.ResourceList{}
		for k, v := range resources {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return fmt.Errorf("--extended-resources %s: %w", k, err)
			}
			list[v1.ResourceName(k)] = q
		}
		containerManager = cm.NewStubContainerManagerWithDevicePluginResource(list)
	}
	endpoint, err := fakeremote.GenerateEndpoint()
	if err != nil {
		return err
	}
	runtime := fakeremote.NewFakeRemoteRuntime()
	if err := runtime.Start(endpoint); err != nil {
		return err
	}
	defer runtime.Stop()
	runtimeService, err := remote.NewRemoteRuntimeService(ctx, endpoint, 15*time.Second, noop.NewTracerProvider(), false)
	if err != nil {
		return err
	}
	hk := kubemark.NewHollowKubelet(f, c, client, heartbeatClient,
		&machine{Fake: &cadvisortest.Fake{NodeName: name}, cores: int(cores.Value()), memory: uint64(mem.Value())},
		runtime.ImageService, &initContainersEnd{RuntimeService: runtimeService, fake: runtime.RuntimeService, pods: client.CoreV1()}, containerManager)
	// The kubelet's own recorder (to the API server) and prober manager.
	hk.KubeletDeps.Recorder = nil
	hk.KubeletDeps.EventClient = client.CoreV1()
	hk.KubeletDeps.ProbeManager = nil
	go hk.Run(ctx)
	<-ctx.Done()
	return nil
}

// initContainersEnd is the runtime the kubelet talks to: kubemark's fake,
// but for the init containers (not sidecars, which have restartPolicy
// Always), which end as they start, exit code 0. The runtime knows a
// container by its name and its Pod's, so which are init containers is
// read from the Pod, as the node's kubelet may read it.
type initContainersEnd struct {
	internalapi.RuntimeService
	fake *apitest.FakeRuntimeService
	pods corev1client.PodsGetter

	mu    sync.Mutex
	inits map[string]bool // by container ID
}

func (r *initContainersEnd) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.RuntimeService.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
	if err != nil {
		return id, err
	}
	md := sandboxConfig.GetMetadata()
	pod, err := r.pods.Pods(md.GetNamespace()).Get(ctx, md.GetName(), metav1.GetOptions{})
	if err != nil {
		return id, fmt.Errorf("hollow-node: failed to read Pod %s/%s to tell its init containers: %w", md.GetNamespace(), md.GetName(), err)
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == config.GetMetadata().GetName() && string(pod.UID) == md.GetUid() && (c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways) {
			r.mu.Lock()
			if r.inits == nil {
				r.inits = map[string]bool{}
			}
			r.inits[id] = true
			r.mu.Unlock()
		}
	}
	return id, nil
}

func (r *initContainersEnd) StartContainer(ctx context.Context, containerID string) error {
	if err := r.RuntimeService.StartContainer(ctx, containerID); err != nil {
		return err
	}
	r.mu.Lock()
	init := r.inits[containerID]
	delete(r.inits, containerID)
	r.mu.Unlock()
	if init {
		klog.V(2).InfoS("An init container ends as it starts", "containerID", containerID)
		r.fake.Lock()
		if c := r.fake.Containers[containerID]; c != nil {
			c.State, c.ExitCode, c.Reason = runtimeapi.ContainerState_CONTAINER_EXITED, 0, "Completed"
			c.FinishedAt = time.Now().UnixNano()
		}
		r.fake.Unlock()
	}
	return nil
}

// machine is kubemark's fake cAdvisor with the profile's CPU and memory.
type machine struct {
	*cadvisortest.Fake
	cores  int
	memory uint64
}

func (m *machine) MachineInfo() (*cadvisorapi.MachineInfo, error) {
	info, err := m.Fake.MachineInfo()
	if err != nil {
		return nil, err
	}
	info.NumCores, info.MemoryCapacity = m.cores, m.memory
	return info, nil
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func pairs(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range split(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}
