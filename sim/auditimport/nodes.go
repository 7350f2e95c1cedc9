package auditimport

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
)

// nodeCreate returns the Node ev created, as it was sent; parsed once,
// for every namespace a log is imported for.
func (e *event) nodeCreate() (*corev1.Node, bool) {
	if !e.nodeParsed {
		e.nodeParsed = true
		e.node = parseNodeCreate(e)
	}
	return e.node, e.node != nil
}

func parseNodeCreate(ev *event) *corev1.Node {
	ref := ev.ObjectRef
	if ref == nil || ref.Resource != "nodes" || ref.Subresource != "" || ev.Verb != "create" || len(ev.RequestObject) == 0 {
		return nil
	}
	if ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 || ev.query("dryRun") != "" {
		return nil
	}
	n := &corev1.Node{}
	if json.Unmarshal(ev.RequestObject, n) != nil || n.Name == "" {
		return nil
	}
	return n
}

// nodeGroups are the node groups of the nodes a recorded run made for the
// scenario of namespace (those isolated to it, cluster.IsolationKey): one
// per group the run named <prefix>-<i>, in name order, with the labels and
// taints the scenario added to its profile's. Nodes of no known profile
// are left out, with a note.
func (b *builder) nodeGroups(nodes []*corev1.Node) []v1alpha1.NodeGroup {
	type group struct {
		key  string
		spec v1alpha1.NodeGroup
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, n := range nodes {
		if n.Labels[cluster.IsolationKey] != b.namespace {
			continue
		}
		profile, err := fakegpu.LookupProfile(n.Labels[fakegpu.ProfileLabel])
		if err != nil {
			b.note(fmt.Sprintf("node %s: %v; left out", n.Name, err))
			continue
		}
		key := n.Name
		if i := strings.LastIndexByte(key, '-'); i > 0 {
			key = key[:i] // <prefix>-<i>: one group's nodes
		}
		g, ok := byKey[key]
		if !ok {
			g = &group{key: key, spec: v1alpha1.NodeGroup{Profile: profile.Name, Labels: addedLabels(n.Labels, profile), Taints: addedTaints(n.Spec.Taints, profile)}}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.spec.Count++
	}
	slices.SortFunc(groups, func(a, b *group) int { return strings.Compare(a.key, b.key) })
	var out []v1alpha1.NodeGroup
	for _, g := range groups {
		out = append(out, g.spec)
	}
	return out
}

// addedLabels are a node's labels that its profile and the harness do not
// set.
func addedLabels(labels map[string]string, p fakegpu.Profile) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		switch k {
		case corev1.LabelHostname, fakegpu.KwokNodeLabel, fakegpu.ProfileLabel, fakegpu.ManagedByLabel, cluster.IsolationKey:
			continue
		}
		if pv, ok := p.Labels[k]; ok && pv == v {
			continue
		}
		if stable, ok := fakegpu.BetaLabels[k]; ok && labels[stable] == v {
			continue // the kubelet's copy (fakegpu.Register)
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// addedTaints are a node's taints that its profile and the isolation do
// not set.
func addedTaints(taints []corev1.Taint, p fakegpu.Profile) []v1alpha1.Taint {
	var out []v1alpha1.Taint
	for _, t := range taints {
		if t.Key == cluster.IsolationKey || slices.ContainsFunc(p.Taints, func(pt corev1.Taint) bool {
			return pt.Key == t.Key && pt.Value == t.Value && pt.Effect == t.Effect
		}) {
			continue
		}
		out = append(out, v1alpha1.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return out
}
