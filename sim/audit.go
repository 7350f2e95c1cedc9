package sim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// Name is the object's: a TrainJob's, as the audit policy records no
	// other.
	Name string
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

// ComponentUser is the user a component's process runs as.
func ComponentUser(component string) string { return "system:" + component }

// auditPolicy records the writes of the component users to TrainJobs: who,
// what and the answer (level Metadata), once answered. Nothing else.
func auditPolicy() string {
	var users []string
	for _, c := range Components {
		users = append(users, fmt.Sprintf("%q", ComponentUser(c)))
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
// last line without its newline, which the server is still writing, is
// left for the next read; any other line that is not an event is an error.
func readComponentRequests(r io.Reader, namespace string) ([]ComponentRequest, error) {
	users := map[string]string{}
	for _, c := range Components {
		users[ComponentUser(c)] = c
	}
	var out []ComponentRequest
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return out, nil // nothing, or a line being written
		}
		if err != nil {
			return out, err
		}
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return out, fmt.Errorf("audit log line %d: %w", n, err)
		}
		component, ok := users[ev.User.Username]
		if !ok || ev.ObjectRef == nil || ev.ObjectRef.Namespace != namespace || ev.ResponseStatus == nil {
			continue
		}
		out = append(out, ComponentRequest{
			At:        ev.StageTimestamp,
			Component: component,
			Verb:      ev.Verb,
			Name:      ev.ObjectRef.Name,
			Code:      ev.ResponseStatus.Code,
			Reason:    ev.ResponseStatus.Reason,
			Message:   ev.ResponseStatus.Message,
		})
	}
}
