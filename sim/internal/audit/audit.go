// Package audit is the API server's audit log as the clusters simctl starts
// keep it (envtest's API server, a kind node's): the policy that records
// the components' writes, and the reading of the log into the writes of
// one namespace (cluster.RequestAuditing).
package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/identity"
)

// The writes of the components as the API server answered them, from its
// audit log: what a component's write met is the server's record, not the
// component's log, and who sent it is the user the server authenticated
// (sim/identity).

// Policy records the writes of every component's user (and of
// kube-controller-manager's controllers' accounts): who, what and the answer
// (level Metadata), once answered; for TrainJobs, the request and response
// objects too (RequestResponse), whose resourceVersions say which write a
// 409 Conflict lost to. Leases, Events and Nodes, which components write all
// the time (heartbeats), and everything else are not recorded.
func Policy() string {
	var users []string
	for _, u := range identity.AllUsers() {
		users = append(users, fmt.Sprintf("%q", u))
	}
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: None
  resources:
  - group: coordination.k8s.io
    resources: [leases]
  - group: ""
    resources: [events]
  - group: events.k8s.io
    resources: [events]
  - group: ""
    resources: [nodes, nodes/status]
- level: RequestResponse
  users: [` + strings.Join(users, ", ") + `]
  verbs: [create, update, patch, delete]
  resources:
  - group: trainer.kubeflow.org
    resources: [trainjobs, trainjobs/status]
- level: Metadata
  users: [` + strings.Join(users, ", ") + `]
  verbs: [create, update, patch, delete]
- level: None
`
}

// auditEvent is the part of an audit.k8s.io/v1 Event read here.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"responseStatus"`
	StageTimestamp time.Time   `json:"stageTimestamp"`
	RequestObject  *objectMeta `json:"requestObject"`
	ResponseObject *objectMeta `json:"responseObject"`
}

// objectMeta is the part of an audit event's request or response object
// read here.
type objectMeta struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// resourceVersion is an object's, "" without one.
func (o *objectMeta) resourceVersion() string {
	if o == nil {
		return ""
	}
	return o.Metadata.ResourceVersion
}

// ReadFile is cluster.RequestAuditing's ComponentRequests of the audit log
// at path: nothing when the server has written none yet.
func ReadFile(path, namespace string) ([]cluster.ComponentRequest, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // nothing recorded yet
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, namespace)
}

// Read reads an audit log: one JSON event per line. A
// last line without its newline, which the server is still writing, is
// left for the next read; any other line that is not an event is an error.
func Read(r io.Reader, namespace string) ([]cluster.ComponentRequest, error) {
	var out []cluster.ComponentRequest
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
		component := identity.Who(ev.User.Username)
		if component == "" || ev.ObjectRef == nil || ev.ObjectRef.Namespace != namespace || ev.ResponseStatus == nil {
			continue
		}
		out = append(out, cluster.ComponentRequest{
			At:          ev.StageTimestamp,
			Component:   component,
			User:        ev.User.Username,
			Verb:        ev.Verb,
			Resource:    ev.ObjectRef.Resource,
			Subresource: ev.ObjectRef.Subresource,
			Name:        ev.ObjectRef.Name,
			Code:        ev.ResponseStatus.Code,
			Reason:      ev.ResponseStatus.Reason,
			Message:     ev.ResponseStatus.Message,
			// What a 409 lost to needs the versions: only TrainJobs'
			// events carry the objects (RequestResponse).
			SentResourceVersion: ev.RequestObject.resourceVersion(),
		})
		if ev.ResponseStatus.Code < 300 {
			out[len(out)-1].ResourceVersion = ev.ResponseObject.resourceVersion()
		}
	}
}
