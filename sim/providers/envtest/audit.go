package envtest

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/audit"
)

// The writes of the components as the API server answered them, from its
// audit log (sim/internal/audit).

// auditLogPath is where the API server writes its audit log.
func (e *Environment) auditLogPath() string {
	if e.AuditLog != "" {
		return e.AuditLog
	}
	return filepath.Join(e.LogDir(), "audit.log")
}

// auditFlags writes the audit policy and returns the API server's flags
// that turn the audit log on. They do not shape what the server stores, so
// they are not part of the snapshot's key.
func (e *Environment) auditFlags() (map[string][]string, error) {
	text := audit.Policy()
	if e.AuditLog != "" {
		text = audit.RecordPolicy()
		if err := audit.CheckNewLog(e.AuditLog); err != nil {
			return nil, err
		}
	}
	policy := filepath.Join(e.WorkDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("failed to write the audit policy: %w", err)
	}
	return map[string][]string{
		"audit-policy-file": {policy},
		"audit-log-path":    {e.auditLogPath()},
		"audit-log-format":  {"json"},
		"audit-log-mode":    {"blocking"},
	}, nil
}

// ComponentRequests is cluster.RequestAuditing: it reads the audit log.
func (e *Environment) ComponentRequests(namespace string) ([]cluster.ComponentRequest, error) {
	e.auditOnce.Do(func() { e.auditLog = &audit.Log{Path: e.auditLogPath()} })
	return e.auditLog.ComponentRequests(namespace)
}
