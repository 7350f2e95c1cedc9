package fakegpu

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kwokconsts "sigs.k8s.io/kwok/pkg/consts"
)

// The marker that tells kwok which Nodes are its to play the kubelet for.
// These are kwok's conventional values (the kwok documentation's fake Node
// carries both). Every Node built here carries both; KwokArgs and the
// embedded KwokConfiguration select on both, so kwok leaves alone any Node
// that lacks either.
const (
	// KwokNodeAnnotation is the annotation key of the marker.
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// KwokNodeAnnotationValue is the annotation value of the marker.
	KwokNodeAnnotationValue = "fake"
	// KwokNodeAnnotationSelector is the value for kwok's
	// --manage-nodes-with-annotation-selector flag.
	KwokNodeAnnotationSelector = KwokNodeAnnotation + "=" + KwokNodeAnnotationValue

	// KwokNodeLabel is the label key of the marker.
	KwokNodeLabel = "type"
	// KwokNodeLabelValue is the label value of the marker.
	KwokNodeLabelValue = "kwok"
	// KwokNodeLabelSelector is the value for kwok's
	// --manage-nodes-with-label-selector flag: the kwok marker and
	// trainersim's own ManagedByLabel, so that a kwok started by trainersim
	// on a shared cluster never plays the kubelet for a Node another kwok
	// user registered with the conventional marker.
	KwokNodeLabelSelector = KwokNodeLabel + "=" + KwokNodeLabelValue + "," + ManagedByLabel + "=" + ManagedByValue
)

// ManagedByLabel, with the value ManagedByValue, marks every object
// trainersim creates in a cluster (Nodes built here included), so that
// `simctl clean` can find what a killed run left behind.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "trainersim"
)

// ProfileLabel is the label NodeGroup.Nodes puts on every Node, with the
// name of the profile the Node was built from (e.g. "nvidia-h100-80gb"), so
// that tools and tests can tell simulated machines apart without decoding
// their other labels.
const ProfileLabel = "trainersim.dev/profile"

// GPUProductLabel is the label GPU feature discovery puts on GPU nodes, and
// the GPU profiles carry: what a Kueue flavor of one selects its nodes by.
const GPUProductLabel = "nvidia.com/gpu.product"

// reservedLabels are set by NodeGroup.Nodes itself; a profile may not set
// them, and a group may not set them to anything else.
var reservedLabels = []string{corev1.LabelHostname, KwokNodeLabel, ProfileLabel, ManagedByLabel}

// DefaultNodeGroupsSpec is DefaultNodeGroups in the form ParseNodeGroups
// reads, for use as a command-line flag's default.
const DefaultNodeGroupsSpec = "nvidia-h100-80gb=2,cpu=1"

// DefaultNodeGroups returns the node groups trainersim simulates when told
// nothing else: two 8-GPU H100 nodes, for multi-node training, and one
// CPU-only node, for Pods that tolerate no GPU taint.
func DefaultNodeGroups() []NodeGroup {
	return []NodeGroup{
		{Profile: "nvidia-h100-80gb", Count: 2},
		{Profile: "cpu", Count: 1},
	}
}

// NodeGroup asks for Count identical Nodes of one profile. Its zero value is
// not valid: Profile and Count are required.
type NodeGroup struct {
	// Profile is the name of a built-in profile (see Profiles). Required.
	Profile string `json:"profile"`
	// Count is how many Nodes to build; it must be at least 1. Zero is an
	// error rather than "no Nodes", so that a forgotten count is noticed.
	Count int `json:"count"`
	// Labels are added to the profile's labels; on a conflict the group's
	// value wins. They may not set kubernetes.io/hostname, and may set
	// ProfileLabel and the kwok marker label only to the values Nodes sets
	// anyway. Nil adds nothing.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are added to the profile's taints; a group taint with the same
	// key and effect as a profile taint replaces it. Nil adds nothing.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// NamePrefix names the Nodes <NamePrefix>-<i>, i counting from 0. Empty
	// means the profile name.
	NamePrefix string `json:"namePrefix,omitempty"`
	// Kubelet is what plays the nodes' kubelet: KubeletSimulated (empty
	// too) or KubeletHollow. Nodes builds the same nodes either way; the
	// cluster starts them.
	Kubelet string `json:"kubelet,omitempty"`
}

// The kubelets a node group's nodes may have (NodeGroup.Kubelet).
const (
	// KubeletSimulated: KWOK and simctl's simulated kubelet (sim/kwok).
	KubeletSimulated = "simulated"
	// KubeletHollow: a hollow kubelet per node, the kubelet's own code over
	// a fake container runtime (envtest only).
	KubeletHollow = "hollow"
)

// Nodes builds the group's Nodes, named <prefix>-0 .. <prefix>-<Count-1>.
//
// Each Node carries the profile's labels and taints merged with the group's,
// kubernetes.io/hostname set to its name, ProfileLabel set to the profile
// name, the kwok marker label and annotation, ManagedByLabel, and the profile's capacity and allocatable in its status (a
// Node may be created with its status; the kubelet registers that way, and
// kwok keeps what it finds). It carries no conditions: Register makes it
// the Ready node a kubelet registers, or kwok's node-initialize stage makes
// a node created without them Ready.
func (g NodeGroup) Nodes() ([]*corev1.Node, error) {
	if g.Count < 1 {
		return nil, fmt.Errorf("failed to build nodes of profile %q: count is %d, must be at least 1", g.Profile, g.Count)
	}
	p, err := LookupProfile(g.Profile)
	if err != nil {
		return nil, fmt.Errorf("failed to build nodes: %w", err)
	}
	prefix := g.NamePrefix
	if prefix == "" {
		prefix = p.Name
	}
	// The longest name decides whether all names are valid.
	if msgs := content.IsDNS1123Subdomain(nodeName(prefix, g.Count-1)); len(msgs) > 0 {
		return nil, fmt.Errorf("failed to build nodes of profile %q: name prefix %q gives invalid node names: %s", g.Profile, prefix, strings.Join(msgs, "; "))
	}

	labels := make(map[string]string, len(p.Labels)+len(g.Labels)+2)
	for k, v := range p.Labels {
		labels[k] = v
	}
	var errs field.ErrorList
	errs = append(errs, metav1validation.ValidateLabels(g.Labels, field.NewPath("labels"))...)
	for k, v := range g.Labels {
		labels[k] = v
	}
	if _, ok := g.Labels[corev1.LabelHostname]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("labels").Key(corev1.LabelHostname), "always set to the node name"))
	}
	if v, ok := g.Labels[KwokNodeLabel]; ok && v != KwokNodeLabelValue {
		errs = append(errs, field.Invalid(field.NewPath("labels").Key(KwokNodeLabel), v, "must be "+KwokNodeLabelValue+": kwok manages only nodes that carry it"))
	}
	if v, ok := g.Labels[ManagedByLabel]; ok && v != ManagedByValue {
		errs = append(errs, field.Invalid(field.NewPath("labels").Key(ManagedByLabel), v, "must be "+ManagedByValue+": trainersim's kwok manages only nodes that carry it"))
	}
	if v, ok := g.Labels[ProfileLabel]; ok && v != p.Name {
		errs = append(errs, field.Invalid(field.NewPath("labels").Key(ProfileLabel), v, "must be the profile name "+p.Name))
	}
	labels[KwokNodeLabel] = KwokNodeLabelValue
	labels[ManagedByLabel] = ManagedByValue
	labels[ProfileLabel] = p.Name

	errs = append(errs, validateTaints(g.Taints, field.NewPath("taints"))...)
	if err := errs.ToAggregate(); err != nil {
		return nil, fmt.Errorf("failed to build nodes of profile %q: %w", g.Profile, err)
	}
	taints := mergeTaints(p.Taints, g.Taints)

	nodes := make([]*corev1.Node, 0, g.Count)
	for i := range g.Count {
		name := nodeName(prefix, i)
		node := &corev1.Node{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{
				Name:   name,
				Labels: make(map[string]string, len(labels)+1),
				Annotations: map[string]string{
					KwokNodeAnnotation: KwokNodeAnnotationValue,
				},
			},
			Status: corev1.NodeStatus{
				Capacity:    p.Capacity.DeepCopy(),
				Allocatable: p.Allocatable.DeepCopy(),
				// What the kubelet reports of the machine; Register
				// (or kwok's node-initialize stage) keeps it and fills
				// in the rest.
				NodeInfo: corev1.NodeSystemInfo{
					Architecture:    labels[corev1.LabelArchStable],
					OperatingSystem: labels[corev1.LabelOSStable],
				},
			},
		}
		for k, v := range labels {
			node.Labels[k] = v
		}
		node.Labels[corev1.LabelHostname] = name
		if len(taints) > 0 {
			node.Spec.Taints = make([]corev1.Taint, len(taints))
			for j := range taints {
				taints[j].DeepCopyInto(&node.Spec.Taints[j])
			}
		}
		nodes = append(nodes, node)
	}
	return nodes, nil
}

func nodeName(prefix string, i int) string {
	return prefix + "-" + strconv.Itoa(i)
}

// mergeTaints returns base followed by extra, where a taint in extra with the
// same key and effect as one in base replaces it in place.
func mergeTaints(base, extra []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(base)+len(extra))
	out = append(out, base...)
	for _, t := range extra {
		replaced := false
		for i := range out {
			if out[i].Key == t.Key && out[i].Effect == t.Effect {
				out[i] = t
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, t)
		}
	}
	return out
}

// BuildNodes builds the Nodes of every group, in order. Node names must be
// unique across groups: two groups of the same profile need distinct
// NamePrefixes.
func BuildNodes(groups []NodeGroup) ([]*corev1.Node, error) {
	var out []*corev1.Node
	seen := map[string]int{}
	for i, g := range groups {
		nodes, err := g.Nodes()
		if err != nil {
			return nil, fmt.Errorf("failed to build node group %d: %w", i, err)
		}
		for _, n := range nodes {
			if j, ok := seen[n.Name]; ok {
				return nil, fmt.Errorf("failed to build node group %d: node %q is also in node group %d", i, n.Name, j)
			}
			seen[n.Name] = i
		}
		out = append(out, nodes...)
	}
	return out, nil
}

// ParseNodeGroups parses the command-line form of node groups: a
// comma-separated list of <profile>=<count>, for example
// "nvidia-h100-80gb=2,cpu=1". Spaces around elements, names and counts are
// ignored. Every profile must be a built-in one, every count at least 1, and
// a profile may appear only once (its Nodes would have the same names).
// Errors name the offending element.
func ParseNodeGroups(s string) ([]NodeGroup, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("failed to parse node groups: empty, want <profile>=<count>[,<profile>=<count>...], e.g. %q", DefaultNodeGroupsSpec)
	}
	var groups []NodeGroup
	seen := map[string]bool{}
	for elem := range strings.SplitSeq(s, ",") {
		g, err := parseNodeGroup(strings.TrimSpace(elem))
		if err != nil {
			return nil, fmt.Errorf("failed to parse node group %q: %w", elem, err)
		}
		if seen[g.Profile] {
			return nil, fmt.Errorf("failed to parse node group %q: profile %q is listed more than once", elem, g.Profile)
		}
		seen[g.Profile] = true
		groups = append(groups, g)
	}
	return groups, nil
}

func parseNodeGroup(elem string) (NodeGroup, error) {
	if elem == "" {
		return NodeGroup{}, fmt.Errorf("empty element, want <profile>=<count>")
	}
	name, countStr, ok := strings.Cut(elem, "=")
	if !ok {
		return NodeGroup{}, fmt.Errorf("missing \"=<count>\", want <profile>=<count>")
	}
	name, countStr = strings.TrimSpace(name), strings.TrimSpace(countStr)
	if name == "" {
		return NodeGroup{}, fmt.Errorf("missing profile name, want <profile>=<count>")
	}
	if _, err := LookupProfile(name); err != nil {
		return NodeGroup{}, err
	}
	count, err := strconv.Atoi(countStr)
	if err != nil {
		return NodeGroup{}, fmt.Errorf("count %q is not an integer", countStr)
	}
	if count < 1 {
		return NodeGroup{}, fmt.Errorf("count is %d, must be at least 1", count)
	}
	return NodeGroup{Profile: name, Count: count}, nil
}

// Register makes node what a kubelet registers (it creates its Node with
// its status, which the API server keeps on create):
//   - the status kwok's node-initialize stage would otherwise patch in
//     after the create (conditions, addresses, system info, phase), with
//     now as the conditions' heartbeat and transition times
//     (TestRegisterIsNodeInitialize: the stage's status);
//   - the beta OS and architecture labels beside the stable ones, which
//     the kubelet sets both of and the node-lifecycle controller otherwise
//     adds (reconcileNodeLabels).
//
// The node is created Ready: kwok plays no stage on it but the heartbeat,
// and the node-lifecycle controller finds it Ready and labelled, so
// neither sends the status and label updates a bare node costs.
func Register(node *corev1.Node, now time.Time) {
	for beta, stable := range BetaLabels {
		if v, ok := node.Labels[stable]; ok {
			if _, ok := node.Labels[beta]; !ok {
				node.Labels[beta] = v
			}
		}
	}
	t := metav1.NewTime(now)
	st := &node.Status
	st.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated", Message: "RouteController created a route"},
	}
	for i := range st.Conditions {
		st.Conditions[i].LastHeartbeatTime = t
		st.Conditions[i].LastTransitionTime = t
	}
	has := func(t corev1.NodeAddressType) bool {
		return slices.ContainsFunc(st.Addresses, func(a corev1.NodeAddress) bool { return a.Type == t })
	}
	if !has(corev1.NodeInternalIP) {
		st.Addresses = append(st.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: KwokNodeIP})
	}
	if !has(corev1.NodeHostName) {
		st.Addresses = append(st.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: node.Name})
	}
	version := "kwok-" + kwokconsts.Version
	info := &st.NodeInfo
	info.Architecture = cmp.Or(info.Architecture, node.Labels[corev1.LabelArchStable], "amd64")
	info.OperatingSystem = cmp.Or(info.OperatingSystem, node.Labels[corev1.LabelOSStable], "linux")
	info.ContainerRuntimeVersion = cmp.Or(info.ContainerRuntimeVersion, version)
	info.KernelVersion = cmp.Or(info.KernelVersion, version)
	info.KubeProxyVersion = cmp.Or(info.KubeProxyVersion, version)
	info.KubeletVersion = cmp.Or(info.KubeletVersion, version)
	st.Phase = corev1.NodeRunning
}

// BetaLabels are the kubelet's beta OS and architecture labels
// (k8s.io/kubelet's kubeletapis.LabelOS and LabelArch), each with the
// stable label whose value it repeats.
var BetaLabels = map[string]string{
	"beta.kubernetes.io/os":   corev1.LabelOSStable,
	"beta.kubernetes.io/arch": corev1.LabelArchStable,
}
