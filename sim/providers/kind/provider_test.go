package kind

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/releases"
)

// TestKindImagesAreTheManifests keeps the images the kind provider loads and
// `make kind-images` builds (named after the Trainer and JobSet this binary
// is built with) the very ones the install manifest runs, so that the
// manifest needs no change and pulls nothing.
func TestKindImagesAreTheManifests(t *testing.T) {
	objs, err := manifests.ReadObjects(fixtures.FS, fixtures.TrainerInstall)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			got = append(got, c.(map[string]any)["image"].(string))
		}
	}
	slices.Sort(got)
	want := kindControllerImages()[:2]
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("images of the install manifest's Deployments mismatch (-want +got):\n%s", diff)
	}
}

// TestAvoidSimulatedNodes checks the one change the kind provider makes to
// the manifests: every Deployment gets the node affinity that keeps it off
// simulated nodes.
func TestAvoidSimulatedNodes(t *testing.T) {
	objs, err := manifests.ReadObjects(fixtures.FS, fixtures.TrainerInstall)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		n++
		if err := avoidSimulatedNodes(o); err != nil {
			t.Fatal(err)
		}
		terms, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
		want := []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "type", "operator": "NotIn", "values": []any{"kwok"}}}}}
		if diff := cmp.Diff(want, terms); diff != "" {
			t.Errorf("node affinity of Deployment %s mismatch (-want +got):\n%s", o.GetName(), diff)
		}
		if err := avoidSimulatedNodes(o); err == nil || !strings.Contains(err.Error(), "sets an affinity already") {
			t.Errorf("a Deployment with an affinity of its own: got %v, want a refusal", err)
		}
	}
	if n != 2 {
		t.Errorf("the install manifest has %d Deployments, want 2 (Trainer, JobSet)", n)
	}
}

// TestKindConfig checks the parts of the kind config that hold on every
// machine.
func TestKindConfig(t *testing.T) {
	cfg := KindConfig("x", KindNodeImage, fakegpu.Heartbeat{})
	if cfg.Networking.APIServerAddress != "127.0.0.1" {
		t.Errorf("API server published on %q, want 127.0.0.1 only", cfg.Networking.APIServerAddress)
	}
	if !cfg.Networking.DisableDefaultCNI {
		t.Error("trainersim's node image brings its own CNI: the default must be off")
	}
	if KindConfig("x", "kindest/node:v1.36.3", fakegpu.Heartbeat{}).Networking.DisableDefaultCNI {
		t.Error("an upstream node image needs kind's default CNI")
	}
	if len(cfg.Nodes) != 1 || cfg.Nodes[0].Image != KindNodeImage {
		t.Errorf("nodes %+v, want one of image %s", cfg.Nodes, KindNodeImage)
	}
	args := controllerManagerArgs(t, cfg)
	// kwok renews the nodes' Leases every 4 s on kind too: the grace is
	// envtest's, and kind's own argument stays.
	want := map[string]string{"enable-hostpath-provisioner": "true", "node-monitor-grace-period": "20s"}
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("kube-controller-manager arguments mismatch (-want +got):\n%s", diff)
	}
	if got := controllerManagerArgs(t, KindConfig("x", KindNodeImage, fakegpu.KubernetesHeartbeat))["node-monitor-grace-period"]; got != "50s" {
		t.Errorf("with the Kubernetes heartbeat, node-monitor-grace-period is %q, want 50s", got)
	}
}

// controllerManagerArgs returns kube-controller-manager's extra arguments
// of cfg's kubeadm ClusterConfiguration.
func controllerManagerArgs(t *testing.T, cfg *v1alpha4.Cluster) map[string]string {
	t.Helper()
	var got struct {
		ControllerManager struct {
			ExtraArgs []struct{ Name, Value string } `json:"extraArgs"`
		} `json:"controllerManager"`
	}
	if err := json.Unmarshal(patchClusterConfiguration(t, cfg), &got); err != nil {
		t.Fatal(err)
	}
	args := map[string]string{}
	for _, a := range got.ControllerManager.ExtraArgs {
		args[a.Name] = a.Value
	}
	return args
}

// patchClusterConfiguration applies cfg's JSON patches of kubeadm's
// ClusterConfiguration (v1beta4, for Kubernetes 1.36), in order, to the
// arguments kind's template gives the API server and the controller
// manager, and returns the result as JSON.
func patchClusterConfiguration(t *testing.T, cfg *v1alpha4.Cluster) []byte {
	t.Helper()
	out := []byte(`{"apiServer":{"extraArgs":[{"name":"runtime-config","value":""}]},` +
		`"controllerManager":{"extraArgs":[{"name":"enable-hostpath-provisioner","value":"true"}]}}`)
	for _, p := range cfg.KubeadmConfigPatchesJSON6902 {
		if p.Group != "kubeadm.k8s.io" || p.Version != "v1beta4" || p.Kind != "ClusterConfiguration" {
			t.Errorf("a patch targets %s/%s %s, want kubeadm.k8s.io/v1beta4 ClusterConfiguration", p.Group, p.Version, p.Kind)
			continue
		}
		ops, err := yaml.YAMLToJSON([]byte(p.Patch))
		if err != nil {
			t.Fatal(err)
		}
		patch, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			t.Fatal(err)
		}
		if out, err = patch.Apply(out); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestKindRefusesAnotherTrainer checks that the kind provider refuses, before
// it touches docker, a release it has no images of.
func TestKindRefusesAnotherTrainer(t *testing.T) {
	k := &Kind{Name: "never-created", Trainer: releases.Trainers[0].Version}
	if err := k.Start(t.Context()); !errors.Is(err, ErrKindTrainer) {
		t.Errorf("Start with the Trainer %s: got %v, want ErrKindTrainer", k.Trainer, err)
	}
}

// TestWithAuditLog: the node mounts the audit directory (and a recorded
// run's log's directory), and the JSON patch kind applies to its kubeadm
// ClusterConfiguration (v1beta4, for Kubernetes 1.36) adds the audit flags
// to the API server's arguments, keeping kind's, and mounts the
// directories into its static Pod.
func TestWithAuditLog(t *testing.T) {
	type volume struct {
		Name      string `json:"name"`
		HostPath  string `json:"hostPath"`
		MountPath string `json:"mountPath"`
		PathType  string `json:"pathType"`
	}
	for _, tc := range []struct {
		record  string
		mounts  []v1alpha4.Mount
		logPath string
		volumes []volume
	}{{
		mounts:  []v1alpha4.Mount{{HostPath: "/work/audit", ContainerPath: auditNodeDir}},
		logPath: auditNodeDir + "/audit.log",
		volumes: []volume{{Name: "trainersim-audit", HostPath: auditNodeDir, MountPath: auditNodeDir, PathType: "Directory"}},
	}, {
		record:  "/home/me/recorded/run.log",
		mounts:  []v1alpha4.Mount{{HostPath: "/work/audit", ContainerPath: auditNodeDir}, {HostPath: "/home/me/recorded", ContainerPath: recordNodeDir}},
		logPath: recordNodeDir + "/run.log",
		volumes: []volume{
			{Name: "trainersim-audit", HostPath: auditNodeDir, MountPath: auditNodeDir, PathType: "Directory"},
			{Name: "trainersim-record", HostPath: recordNodeDir, MountPath: recordNodeDir, PathType: "Directory"},
		},
	}} {
		cfg := KindConfig("x", KindNodeImage, fakegpu.Heartbeat{})
		withAuditLog(cfg, "/work/audit", tc.record)
		if diff := cmp.Diff(tc.mounts, cfg.Nodes[0].ExtraMounts); diff != "" {
			t.Errorf("record %q: node mounts mismatch (-want +got):\n%s", tc.record, diff)
		}
		out := patchClusterConfiguration(t, cfg)
		var got struct {
			APIServer struct {
				ExtraArgs    []struct{ Name, Value string } `json:"extraArgs"`
				ExtraVolumes []volume                       `json:"extraVolumes"`
			} `json:"apiServer"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		args := map[string]string{}
		for _, a := range got.APIServer.ExtraArgs {
			args[a.Name] = a.Value
		}
		want := map[string]string{
			"runtime-config":    "",
			"audit-policy-file": auditNodeDir + "/policy.yaml",
			"audit-log-path":    tc.logPath,
			"audit-log-format":  "json",
			"audit-log-mode":    "blocking",
		}
		if diff := cmp.Diff(want, args); diff != "" {
			t.Errorf("record %q: API server arguments mismatch (-want +got):\n%s", tc.record, diff)
		}
		if diff := cmp.Diff(tc.volumes, got.APIServer.ExtraVolumes); diff != "" {
			t.Errorf("record %q: API server volumes mismatch (-want +got):\n%s", tc.record, diff)
		}
	}
}
