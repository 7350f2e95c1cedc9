package sim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The requests of the components (Kueue) as the API server answered them,
// from its audit log: what a component's write met is the server's record,
// not the component's log.

// ComponentRequest is a request of a component to an object, as the API
// server's audit log recorded it.
type ComponentRequest struct {
	// At is when the API server answered.
	At time.Time
	// Component is the component that sent it (kueue).
	Component string
	// Verb is the request's: create, update, patch or delete.
	Verb string
	// Resource, Namespace and Name are the object's.
	Resource, Namespace, Name string
	// Code is the HTTP status code of the answer; Reason and Message are a
	// refusal's.
	Code            int
	Reason, Message string
}

// RequestAuditing is implemented by clusters whose API server records the
// components' requests (Environment).
type RequestAuditing interface {
	// ComponentRequests returns the requests of components to objects of
	// a namespace recorded so far, in the order they were answered.
	ComponentRequests(namespace string) ([]ComponentRequest, error)
}

// componentUserPrefix is the prefix of the users the components run as
// (system:<component>, see startManager).
const componentUserPrefix = "system:"

// auditPolicy records the writes of the component users to TrainJobs: who,
// what and the answer (level Metadata), once answered. Nothing else.
func auditPolicy() string {
	var users []string
	for _, c := range Components {
		users = append(users, fmt.Sprintf("%q", componentUserPrefix+c))
	}
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  users: [` + strings.Join(users, ", ") + `]
  verbs: [create, update, patch, delete]
  resources:
  - group: trainer.kubeflow.org
    resources: [trainjobs]
- level: None
`
}

// auditLogPath is where the API server writes its audit log.
func (e *Environment) auditLogPath() string { return filepath.Join(e.LogDir(), "audit.log") }

// auditFlags writes the audit policy and returns the API server's flags
// that turn the audit log on. They do not shape what the server stores, so
// they are not part of the snapshot's key.
func (e *Environment) auditFlags() (map[string][]string, error) {
	policy := filepath.Join(e.WorkDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy()), 0o644); err != nil {
		return nil, fmt.Errorf("failed to write the audit policy: %w", err)
	}
	return map[string][]string{
		"audit-policy-file": {policy},
		"audit-log-path":    {e.auditLogPath()},
		"audit-log-format":  {"json"},
		"audit-log-mode":    {"blocking"},
	}, nil
}

// auditEvent is the part of an audit.k8s.io/v1 Event read here.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"responseStatus"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// ComponentRequests is RequestAuditing: it reads the audit log.
func (e *Environment) ComponentRequests(namespace string) ([]ComponentRequest, error) {
	f, err := os.Open(e.auditLogPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // nothing recorded yet
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readComponentRequests(f, namespace)
}

// readComponentRequests reads an audit log: one JSON event per line. A
// line the server is still writing (the last, cut short) is left for the
// next read.
func readComponentRequests(f *os.File, namespace string) ([]ComponentRequest, error) {
	var out []ComponentRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue
		}
		component, ok := strings.CutPrefix(ev.User.Username, componentUserPrefix)
		if !ok || ev.ObjectRef == nil || ev.ObjectRef.Namespace != namespace || ev.ResponseStatus == nil {
			continue
		}
		out = append(out, ComponentRequest{
			At:        ev.StageTimestamp,
			Component: component,
			Verb:      ev.Verb,
			Resource:  ev.ObjectRef.Resource,
			Namespace: ev.ObjectRef.Namespace,
			Name:      ev.ObjectRef.Name,
			Code:      ev.ResponseStatus.Code,
			Reason:    ev.ResponseStatus.Reason,
			Message:   ev.ResponseStatus.Message,
		})
	}
	return out, sc.Err()
}
