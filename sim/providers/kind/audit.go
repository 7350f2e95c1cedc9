package kind

// The kind node's API server keeps the same audit log as envtest's
// (sim/internal/audit): its policy and log are in a directory of the work
// directory that the node container mounts (kind's extraMounts) and the API
// server's static Pod mounts in turn (kubeadm's extraVolumes), so that
// simctl reads the log where the server writes it, as on envtest.

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/audit"
)

// auditNodeDir is where the node and its API server see the audit
// directory.
const auditNodeDir = "/var/log/trainersim-audit"

// Files of the audit directory.
const (
	auditPolicyFile = "policy.yaml"
	auditLogFile    = "audit.log"
)

var _ cluster.RequestAuditing = (*Kind)(nil)

// auditDir is the audit directory on this machine.
func (k *Kind) auditDir() string { return filepath.Join(k.WorkDir, "audit") }

// writeAuditPolicy creates the audit directory with the policy in it,
// before the node starts.
func (k *Kind) writeAuditPolicy() error {
	if err := os.MkdirAll(k.auditDir(), 0o755); err != nil {
		return fmt.Errorf("failed to create the audit directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.auditDir(), auditPolicyFile), []byte(audit.Policy()), 0o644); err != nil {
		return fmt.Errorf("failed to write the audit policy: %w", err)
	}
	return nil
}

// ComponentRequests is cluster.RequestAuditing: it reads the node's API
// server's audit log.
func (k *Kind) ComponentRequests(namespace string) ([]cluster.ComponentRequest, error) {
	k.auditOnce.Do(func() { k.auditLog = &audit.Log{Path: filepath.Join(k.auditDir(), auditLogFile)} })
	return k.auditLog.ComponentRequests(namespace)
}

// withAuditLog turns the API server's audit log on in cfg, its directory
// hostDir on this machine: the node mounts it, and kubeadm gives the API
// server the flags envtest's has and mounts it into its static Pod. The
// flags are appended (a JSON patch) to the ones kind sets.
func withAuditLog(cfg *v1alpha4.Cluster, hostDir string) {
	for i := range cfg.Nodes {
		if cfg.Nodes[i].Role == v1alpha4.ControlPlaneRole {
			cfg.Nodes[i].ExtraMounts = append(cfg.Nodes[i].ExtraMounts, v1alpha4.Mount{HostPath: hostDir, ContainerPath: auditNodeDir})
		}
	}
	arg := func(name, value string) string {
		return fmt.Sprintf("- op: add\n  path: /apiServer/extraArgs/-\n  value: {name: %s, value: %q}\n", name, value)
	}
	patch := arg("audit-policy-file", auditNodeDir+"/"+auditPolicyFile) +
		arg("audit-log-path", auditNodeDir+"/"+auditLogFile) +
		arg("audit-log-format", "json") +
		arg("audit-log-mode", "blocking") +
		fmt.Sprintf("- op: add\n  path: /apiServer/extraVolumes\n  value: [{name: trainersim-audit, hostPath: %s, mountPath: %s, pathType: Directory}]\n", auditNodeDir, auditNodeDir)
	cfg.KubeadmConfigPatchesJSON6902 = append(cfg.KubeadmConfigPatchesJSON6902, v1alpha4.PatchJSON6902{
		Group: "kubeadm.k8s.io", Version: "v1beta4", Kind: "ClusterConfiguration", Patch: patch,
	})
}
