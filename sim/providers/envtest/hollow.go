package envtest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/kwok"
)

// A hollow node is a node whose kubelet is the kubelet's own code: kubemark's
// hollow kubelet over a fake container runtime (hack/kubemark, built by make
// assets as bin/k8s/<version>/hollow-node), one process per node, with the
// node's own identity (system:node:NAME, group system:nodes, a client
// certificate of the API server's CA). It registers its node itself, with
// the labels, taints and capacity the profile gives (GPUs as extended
// resources, as a device plugin registers them), and renews the node's
// Lease. KWOK and simctl's simulated kubelet leave it alone: it carries
// neither half of KWOK's marker.

// HollowNodeBinary is the hollow kubelet's binary in the assets directory.
const HollowNodeBinary = "hollow-node"

// hollowNodesRole binds the group system:nodes to the bootstrap ClusterRole
// system:node. A kubeadm cluster authorizes kubelets with the Node
// authorizer and NodeRestriction instead, which narrow the same rights to
// the node's own objects; envtest's API server runs RBAC alone.
var hollowNodesRole = &rbacv1.ClusterRoleBinding{
	ObjectMeta: metav1.ObjectMeta{Name: "trainersim:hollow-nodes"},
	RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
	Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}},
}

// hollowExtended are the resources of a profile's capacity that are not the
// node's own (CPU, memory, pods, storage): a device plugin's.
func hollowExtended(capacity corev1.ResourceList) []string {
	var out []string
	for name, q := range capacity {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage, corev1.ResourceStorage:
			continue
		}
		out = append(out, string(name)+"="+q.String())
	}
	slices.Sort(out)
	return out
}

// kubeletMaySet reports whether a kubelet may register its node with the
// label key, as NodeRestriction decides it: any label outside the
// kubernetes.io and k8s.io namespaces (the plugin's isKubernetesLabel, in
// the API server's code, not a library), and in them those the kubelet's
// own IsKubeletLabel allows.
func kubeletMaySet(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	under := func(domain string) bool { return ns == domain || strings.HasSuffix(ns, "."+domain) }
	return !under("kubernetes.io") && !under("k8s.io") || kubeletapis.IsKubeletLabel(key)
}

// adminLabels are the labels of node n as fakegpu builds it that its
// kubelet may not set (the kubelet's own IsKubeletLabel, which the
// NodeRestriction admission plugin enforces): simctl sets them once it has
// registered, as a cluster's admin or its node provisioning does.
func adminLabels(n *corev1.Node) map[string]string {
	out := map[string]string{}
	for k, v := range n.Labels {
		if !kubeletMaySet(k) {
			out[k] = v
		}
	}
	return out
}

// hollowArgs are the hollow kubelet's arguments for node n as fakegpu builds
// it and its kubeconfig.
func hollowArgs(n *corev1.Node, kubeconfig string) []string {
	var labels, taints []string
	for k, v := range n.Labels {
		if k == fakegpu.KwokNodeLabel || k == corev1.LabelHostname || !kubeletMaySet(k) {
			continue // KWOK's marker; the kubelet sets the hostname; adminLabels
		}
		labels = append(labels, k+"="+v)
	}
	slices.Sort(labels)
	for _, t := range n.Spec.Taints {
		taints = append(taints, t.Key+"="+t.Value+":"+string(t.Effect))
	}
	c := n.Status.Capacity
	pods := c[corev1.ResourcePods]
	return []string{
		"--name=" + n.Name,
		"--kubeconfig=" + kubeconfig,
		"--max-pods=" + strconv.FormatInt(cmp.Or(pods.Value(), 110), 10),
		"--cpu=" + quantity(c, corev1.ResourceCPU, "1"),
		"--memory=" + quantity(c, corev1.ResourceMemory, "4026531840"),
		"--node-labels=" + strings.Join(labels, ","),
		"--register-with-taints=" + strings.Join(taints, ","),
		"--extended-resources=" + strings.Join(hollowExtended(c), ","),
	}
}

func quantity(c corev1.ResourceList, name corev1.ResourceName, fallback string) string {
	if q, ok := c[name]; ok {
		return q.String()
	}
	q := resource.MustParse(fallback)
	return q.String()
}

// addHollowNodes starts a hollow kubelet for each node of groups and waits
// until each node is Ready and schedulable. It returns their names, those
// started when it fails too.
func (e *Environment) addHollowNodes(ctx context.Context, groups []fakegpu.NodeGroup) ([]string, error) {
	bins, err := assets.Find(e.AssetsDir, HollowNodeBinary)
	if err != nil {
		return nil, fmt.Errorf("hollow kubelets (kubelet: hollow): %w", err)
	}
	nodes, err := fakegpu.BuildNodes(groups)
	if err != nil {
		return nil, err
	}
	if err := e.client.Create(ctx, hollowNodesRole.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("failed to let hollow kubelets act as nodes: %w", err)
	}
	dir := filepath.Join(e.WorkDir, "hollow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var names []string
	var started []*proc.Process
	for _, n := range nodes {
		kubeconfig := filepath.Join(dir, n.Name+".kubeconfig")
		if err := e.writeKubeconfig(envtest.User{Name: "system:node:" + n.Name, Groups: []string{"system:nodes"}}, kubeconfig); err != nil {
			return names, err
		}
		p := &proc.Process{
			Name:    "hollow-node-" + n.Name,
			Path:    bins[HollowNodeBinary],
			Args:    hollowArgs(n, kubeconfig),
			LogPath: filepath.Join(e.LogDir(), "hollow-node-"+n.Name+".log"),
		}
		if err := p.Start(); err != nil {
			return names, fmt.Errorf("failed to start the hollow kubelet of node %s: %w", n.Name, err)
		}
		e.trackProcess(p)
		e.mu.Lock()
		if e.hollow == nil {
			e.hollow = map[string]*proc.Process{}
		}
		e.hollow[n.Name] = p
		e.mu.Unlock()
		started = append(started, p)
		names = append(names, n.Name)
	}
	// A hollow kubelet that exits before its node is schedulable ends the
	// wait with its log's last lines.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for _, p := range started {
		go func() {
			select {
			case <-p.Exited():
				cancel(fmt.Errorf("the hollow kubelet %s exited: %w; last log lines:\n%s", p.Name, p.ExitError(), p.LogTail(20)))
			case <-wctx.Done():
			}
		}()
	}
	if err := (&kwok.Pool{Client: e.client}).WaitSchedulable(wctx, names); err != nil {
		return names, fmt.Errorf("hollow nodes did not become ready: %w", errors.Join(err, context.Cause(wctx)))
	}
	for _, n := range nodes {
		labels := adminLabels(n)
		if len(labels) == 0 {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
		if err != nil {
			return names, err
		}
		if err := e.client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return names, fmt.Errorf("failed to label hollow node %s: %w", n.Name, err)
		}
	}
	return names, nil
}

// removeHollowNodes stops the hollow kubelets of names that have one, then
// deletes their nodes (a stopped kubelet deletes nothing); it returns the
// names that are not hollow nodes.
func (e *Environment) removeHollowNodes(ctx context.Context, names []string) ([]string, error) {
	var rest, hollow []string
	var errs []error
	for _, name := range names {
		e.mu.Lock()
		p := e.hollow[name]
		delete(e.hollow, name)
		e.mu.Unlock()
		if p == nil {
			rest = append(rest, name)
			continue
		}
		hollow = append(hollow, name)
		if err := p.Stop(5 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("failed to stop the hollow kubelet of node %s: %w", name, err))
		}
	}
	if len(hollow) > 0 {
		errs = append(errs, (&kwok.Pool{Client: e.client}).Remove(ctx, hollow))
	}
	return rest, errors.Join(errs...)
}
