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
// directory; recordNodeDir the directory of Kind.AuditLog, a recorded
// run's log.
const (
	auditNodeDir  = "/var/log/trainersim-audit"
	recordNodeDir = "/var/log/trainersim-record"
)

// Files of the audit directory.
const (
	auditPolicyFile = "policy.yaml"
	auditLogFile    = "audit.log"
)

var _ cluster.RequestAuditing = (*Kind)(nil)

// auditDir is the audit directory on this machine.
func (k *Kind) auditDir() string { return filepath.Join(k.WorkDir, "audit") }

// auditLogPath is the audit log on this machine: Kind.AuditLog, else the
// audit directory's.
func (k *Kind) auditLogPath() string {
	if k.AuditLog != "" {
		return k.AuditLog
	}
	return filepath.Join(k.auditDir(), auditLogFile)
}

// writeAuditPolicy creates the audit directory with the policy in it,
// before the node starts: the record policy when the run is recorded
// (Kind.AuditLog).
func (k *Kind) writeAuditPolicy() error {
	text := audit.Policy()
	if k.AuditLog != "" {
		text = audit.RecordPolicy()
		if err := audit.CheckNewLog(k.AuditLog); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(k.auditDir(), 0o755); err != nil {
		return fmt.Errorf("failed to create the audit directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.auditDir(), auditPolicyFile), []byte(text), 0o644); err != nil {
		return fmt.Errorf("failed to write the audit policy: %w", err)
	}
	return nil
}

// ComponentRequests is cluster.RequestAuditing: it reads the node's API
// server's audit log.
func (k *Kind) ComponentRequests(namespace string) ([]cluster.ComponentRequest, error) {
	k.auditOnce.Do(func() { k.auditLog = &audit.Log{Path: k.auditLogPath()} })
	return k.auditLog.ComponentRequests(namespace)
}

// withAuditLog turns the API server's audit log on in cfg, its directory
// hostDir on this machine: the node mounts it, and kubeadm gives the API
// server the flags envtest's has and mounts it into its static Pod. The
// flags are appended (a JSON patch) to the ones kind sets. record, when
// set, is the file on this machine the log goes to instead (a recorded
// run's, Kind.AuditLog): its directory is mounted too.
func withAuditLog(cfg *v1alpha4.Cluster, hostDir, record string) {
	logPath := auditNodeDir + "/" + auditLogFile
	volumes := fmt.Sprintf("{name: trainersim-audit, hostPath: %s, mountPath: %s, pathType: Directory}", auditNodeDir, auditNodeDir)
	mounts := []v1alpha4.Mount{{HostPath: hostDir, ContainerPath: auditNodeDir}}
	if record != "" {
		logPath = recordNodeDir + "/" + filepath.Base(record)
		volumes += fmt.Sprintf(", {name: trainersim-record, hostPath: %s, mountPath: %s, pathType: Directory}", recordNodeDir, recordNodeDir)
		mounts = append(mounts, v1alpha4.Mount{HostPath: filepath.Dir(record), ContainerPath: recordNodeDir})
	}
	for i := range cfg.Nodes {
		if cfg.Nodes[i].Role == v1alpha4.ControlPlaneRole {
			cfg.Nodes[i].ExtraMounts = append(cfg.Nodes[i].ExtraMounts, mounts...)
		}
	}
	arg := func(name, value string) string { return addExtraArg("apiServer", name, value) }
	patch := arg("audit-policy-file", auditNodeDir+"/"+auditPolicyFile) +
		arg("audit-log-path", logPath) +
		arg("audit-log-format", "json") +
		arg("audit-log-mode", "blocking") +
		fmt.Sprintf("- op: add\n  path: /apiServer/extraVolumes\n  value: [%s]\n", volumes)
	cfg.KubeadmConfigPatchesJSON6902 = append(cfg.KubeadmConfigPatchesJSON6902, clusterConfigurationPatch(patch))
}

// addExtraArg is a JSON patch operation (YAML) that adds an argument to
// a control plane component of kubeadm's ClusterConfiguration v1beta4
// (apiServer, controllerManager), after kind's own.
func addExtraArg(component, name, value string) string {
	return fmt.Sprintf("- op: add\n  path: /%s/extraArgs/-\n  value: {name: %s, value: %q}\n", component, name, value)
}

// clusterConfigurationPatch is a JSON patch of kubeadm's
// ClusterConfiguration for Kubernetes 1.36 (v1beta4).
func clusterConfigurationPatch(patch string) v1alpha4.PatchJSON6902 {
	return v1alpha4.PatchJSON6902{Group: "kubeadm.k8s.io", Version: "v1beta4", Kind: "ClusterConfiguration", Patch: patch}
}
