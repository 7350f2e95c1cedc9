package fakegpu

import (
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// kwokConfig is the multi-document kwok configuration: one
// KwokConfiguration and the Stages that make kwok play the kubelet.
//
//go:embed kwok/config.yaml
var kwokConfig []byte

// Values of the embedded KwokConfiguration that KwokArgs also passes as
// flags. Flags win over any config file, so passing them keeps a stray
// $KWOK_WORKDIR/kwok.yaml from changing them.
const (
	// KwokNodeIP is the address kwok reports as every managed Node's
	// InternalIP and every Pod's hostIP: loopback, so that anything dialing
	// a "kubelet" (the API server's logs, exec and port-forward proxy) stays
	// on this machine.
	KwokNodeIP = "127.0.0.1"
	// KwokPodCIDR is the range kwok gives Pod IPs from. The addresses only
	// appear in Pod and EndpointSlice status; nothing connects to them. It
	// differs from kwok's default, 10.0.0.0/24, which is also envtest's
	// Service range, so that no Pod shares an address with a Service (the
	// first Pod would get the kubernetes Service's 10.0.0.1).
	KwokPodCIDR = "10.244.0.0/16"
)

// Heartbeat is how the simulated kubelets and the node-lifecycle
// controller of a cluster simctl starts (envtest and kind) keep track of
// a node being alive: KWOK holds each node's Lease for
// NodeLeaseDurationSeconds and renews it every quarter of that, as a
// kubelet with that nodeLeaseDurationSeconds does, and
// kube-controller-manager marks a node Unknown once NodeMonitorGracePeriod
// has passed without a renewal (--node-monitor-grace-period). The zero
// value is FastHeartbeat.
type Heartbeat struct {
	NodeLeaseDurationSeconds int
	NodeMonitorGracePeriod   time.Duration
}

// The two heartbeats simctl's clusters run. Both miss five renewals before
// a node is Unknown.
var (
	// KubernetesHeartbeat is the kubelet's and kube-controller-manager's
	// defaults, which kubeadm keeps: a 40 s Lease renewed every 10 s, 50 s
	// of grace. The length of the grace guards against a kubelet's HTTP/2
	// connection to the API server dying silently (client-go notices after
	// 45 s).
	KubernetesHeartbeat = Heartbeat{NodeLeaseDurationSeconds: 40, NodeMonitorGracePeriod: 50 * time.Second}
	// FastHeartbeat is the "fast update, fast reaction" profile: a 16 s
	// Lease renewed every 4 s, 20 s of grace. Simulated kubelets talk to the
	// API server on loopback or in the same kind node, where a connection is
	// closed, not lost, so the shorter grace loses nothing the default
	// guards against; it lets a scenario that takes a node unreachable end
	// in about 30 s instead of a minute, for 2.5 times as many renewals
	// (docs/performance.md).
	FastHeartbeat = Heartbeat{NodeLeaseDurationSeconds: 16, NodeMonitorGracePeriod: 20 * time.Second}
)

// OrFast returns h, or FastHeartbeat when h is the zero value.
func (h Heartbeat) OrFast() Heartbeat {
	if h == (Heartbeat{}) {
		return FastHeartbeat
	}
	return h
}

// RenewInterval is how often KWOK renews a node's Lease: a quarter of its
// duration, as the kubelet does (kwok's node-lease controller, with 4%
// jitter).
func (h Heartbeat) RenewInterval() time.Duration {
	return time.Duration(h.NodeLeaseDurationSeconds) * time.Second / 4
}

// String names the heartbeat for reports and logs.
func (h Heartbeat) String() string {
	h = h.OrFast()
	name := "custom"
	switch h {
	case FastHeartbeat:
		name = "fast"
	case KubernetesHeartbeat:
		name = "Kubernetes defaults"
	}
	return fmt.Sprintf("%s (Lease renewed every %s, %s of grace)", name, h.RenewInterval(), h.NodeMonitorGracePeriod)
}

// KwokWorkDirEnv is the environment variable that sets kwok's work
// directory (default ~/.kwok). kwok reads <workdir>/kwok.yaml, if it exists,
// before the --config files, and its KwokConfiguration and Stages would mix
// with ours (the first KwokConfiguration wins). The process runner should
// set it to an empty directory of its own, e.g. KwokWorkDirEnv+"="+tmpDir.
const KwokWorkDirEnv = "KWOK_WORKDIR"

// KwokConfig returns the configuration for the kwok binary, to be written to
// a file and passed with --config (see KwokArgs). It is a multi-document
// YAML: a KwokConfiguration (config.kwok.x-k8s.io/v1alpha1) followed by the
// Stages (kwok.x-k8s.io/v1alpha1), in this order:
//
//   - node-initialize makes a managed Node Ready (kubelet conditions,
//     addresses, node info), keeping the capacity it was created with;
//   - node-heartbeat-with-lease re-posts the conditions every 10m to 10m10s,
//     while kwok renews the Node's Lease (KwokArgs);
//   - pod-ready moves a bound Pod to Running with running, ready
//     containers, a podIP and Ready conditions;
//   - pod-terminate makes a Pod that is being deleted Failed, as a kubelet
//     does when it stops it, so that finalizer owners such as the Job
//     controller release it;
//   - pod-delete removes a terminal Pod that is being deleted (grace period
//     0), leaving finalizers to their owners as kwok does.
//
// There is no pod-complete stage: Pods stay Running until they are deleted.
//
// The returned slice is a copy; callers may modify it.
func KwokConfig() []byte {
	return slices.Clone(kwokConfig)
}

// KwokArgs returns the arguments (without the program name) for the kwok
// binary of sigs.k8s.io/kwok v0.8.0, talking to the API server described by
// the kubeconfig file at kubeconfigPath and configured by the file at
// configPath, which must hold KwokConfig, renewing node Leases as hb says
// (its zero value: FastHeartbeat). Run it with KwokWorkDirEnv set to a
// directory of its own.
//
// Each flag and why it is there:
//
//   - --kubeconfig: the API server to play the kubelet for. Without it kwok
//     falls back to ~/.kube/config or the in-cluster config, i.e. possibly a
//     real cluster.
//   - --config: the Stages and options of KwokConfig. Without Stages kwok
//     refuses to start ("no stages found").
//   - --manage-all-nodes=false, --manage-nodes-with-annotation-selector and
//     --manage-nodes-with-label-selector: manage only Nodes carrying the
//     marker NodeGroup.Nodes sets (kwok requires both selectors to match),
//     never a Node someone else registered. kwok refuses to start when no
//     Node selection is given, and when manage-all-nodes is combined with
//     the selectors, so it is pinned to false here.
//   - --server-address= (empty) and --node-port=0: kwok starts its HTTP
//     server (healthz, metrics, logs/exec/port-forward for Pods, debugging
//     and pprof handlers) only if one of these is set, and a non-zero
//     node port alone makes it listen on 0.0.0.0. Passing both empty keeps
//     kwok from listening on any address at all.
//   - --node-ip=127.0.0.1 (KwokNodeIP): the InternalIP of every Node and the
//     hostIP of every Pod, so nothing ever dials a non-loopback "kubelet".
//   - --node-lease-duration-seconds (hb.NodeLeaseDurationSeconds): hold
//     and renew a Lease in kube-node-lease for each Node, as the kubelet
//     does. Without it (0) kwok keeps no leases; the node-lifecycle
//     controller would then see a heartbeat only every ~10 minutes, mark
//     the Nodes NotReady, taint them and evict their Pods.
//   - --cidr=10.244.0.0/16 (KwokPodCIDR): where Pod IPs come from; kwok's
//     default overlaps envtest's Service range.
func KwokArgs(kubeconfigPath, configPath string, hb Heartbeat) []string {
	return []string{
		"--kubeconfig=" + kubeconfigPath,
		"--config=" + csvQuote(configPath),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotationSelector,
		"--manage-nodes-with-label-selector=" + KwokNodeLabelSelector,
		"--server-address=",
		"--node-port=0",
		"--node-ip=" + KwokNodeIP,
		"--cidr=" + KwokPodCIDR,
		"--node-lease-duration-seconds=" + strconv.Itoa(hb.OrFast().NodeLeaseDurationSeconds),
	}
}

// csvQuote quotes s for a pflag string-slice flag such as kwok's --config,
// which splits its value as a CSV record: a path containing a comma or a
// double quote would otherwise become several paths.
func csvQuote(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") && strings.TrimSpace(s) == s {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// The kubelet's crash-loop back-off (kubelet 1.36 defaults: the
// ReduceDefaultCrashLoopBackOffDecay gate is off): a container that fails
// again after it was restarted waits this long before the next restart,
// doubling each time.
const (
	CrashLoopBackOffInitial = 10 * time.Second
	CrashLoopBackOffMax     = 300 * time.Second
)

// CrashLoopBackOff is how long a kubelet waits before it restarts a
// container that failed with restartCount restarts behind it: nothing after
// the first failure (restartCount 0), then initial, doubled for each restart
// after the first, at most max. The KWOK stage pod-crash-loop computes the
// same (TestCrashLoopBackOffMatchesStage).
func CrashLoopBackOff(restartCount int32, initial, max time.Duration) time.Duration {
	if restartCount == 0 {
		return 0
	}
	d := initial
	for range restartCount - 1 {
		if d >= max {
			break
		}
		d *= 2
	}
	return min(d, max)
}

// CrashLoopBackOffMessage is the kubelet's message of a container waiting in
// CrashLoopBackOff; the KWOK stage pod-back-off-restart reads the back-off
// from it.
func CrashLoopBackOffMessage(backOff time.Duration, container, podName, namespace, uid string) string {
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backOff, container, podName, namespace, uid)
}
