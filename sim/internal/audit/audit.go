// Package audit is the API server's audit log as the clusters simctl starts
// keep it (envtest's API server, a kind node's): the policy that records
// the components' writes, and the reading of the log into the writes of
// one namespace (cluster.RequestAuditing).
package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
// (level Metadata), once answered; for TrainJobs and the JobSets' status,
// the request and response objects too (RequestResponse), whose
// resourceVersions say which write a 409 Conflict lost to and which
// version of the object each write made (the writes simctl explore flips). Leases, Events and Nodes, which components write all
// the time (heartbeats), and everything else are not recorded.
func Policy() string { return policy(false) }

// RecordPolicy is Policy, and what a scenario can be rebuilt from: every
// other user's writes (the actors', the harness's set-up, kubectl's, an
// in-house controller's) to TrainJobs and to what they depend on (runtimes, ServiceAccounts, PersistentVolumeClaims,
// ConfigMaps, the namespace's ResourceQuotas, their status included, and
// LimitRanges, Kueue's queues and priority classes) with their request and
// response objects (RequestResponse: the bodies to replay, the
// resourceVersions that say which write a stale one raced, the objects the
// scenario ends with), and the Pods and Nodes as they were created and
// the Pods' bindings (Request): what the Pods were made with, and the nodes
// a scenario needs.
func RecordPolicy() string { return policy(true) }

// RecordedResources are the resources RecordPolicy records every user's
// writes to, by API group.
var RecordedResources = map[string][]string{
	"trainer.kubeflow.org": {"trainjobs", "trainingruntimes", "clustertrainingruntimes"},
	"":                     {"serviceaccounts", "persistentvolumeclaims", "configmaps", "resourcequotas", "resourcequotas/status", "limitranges"},
	"kueue.x-k8s.io":       {"localqueues", "clusterqueues", "resourceflavors", "workloadpriorityclasses"},
}

func policy(record bool) string {
	var users []string
	for _, u := range identity.AllUsers() {
		users = append(users, fmt.Sprintf("%q", u))
	}
	componentUsers := strings.Join(users, ", ")
	rules := ""
	if record {
		// First, before the heartbeats' rule: Pods and Nodes as they
		// were created (a node's labels and taints), not their updates,
		// and the node each Pod was bound to;
		// the Pods' status as the kubelets wrote it (the phase a
		// manager's write met), and the JobSets' as their controller
		// left it (the Trainer refuses a change while a Job is active);
		// a namespace's delete, where its scenario ended (what the
		// components write after it is the teardown's).
		rules += `- level: Request
  verbs: [create]
  resources:
  - group: ""
    resources: [pods, nodes, pods/binding]
- level: Request
  verbs: [update, patch]
  resources:
  - group: ""
    resources: [pods/status]
- level: RequestResponse
  verbs: [update, patch]
  resources:
  - group: jobset.x-k8s.io
    resources: [jobsets/status]
- level: Metadata
  verbs: [delete]
  resources:
  - group: ""
    resources: [namespaces]
`
	}
	rules += `- level: None
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
  users: [` + componentUsers + `]
  verbs: [create, update, patch, delete]
  resources:
  - group: trainer.kubeflow.org
    resources: [trainjobs, trainjobs/status]
  - group: jobset.x-k8s.io
    resources: [jobsets/status]
`
	if record {
		rules += `- level: RequestResponse
  verbs: [create, update, patch, delete]
  resources:
`
		for _, group := range slices.Sorted(maps.Keys(RecordedResources)) {
			rules += fmt.Sprintf("  - group: %q\n    resources: [%s]\n", group, strings.Join(RecordedResources[group], ", "))
		}
	}
	rules += `- level: Metadata
  users: [` + componentUsers + `]
  verbs: [create, update, patch, delete]
- level: None
`
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
` + rules
}

// CheckNewLog checks that path can take a recorded run's audit log: a
// file that does not exist yet (its directory is created) or is empty, so
// that one log holds one cluster's requests.
func CheckNewLog(path string) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("failed to create the audit log's directory: %w", err)
		}
		return nil
	case err != nil:
		return err
	case info.IsDir():
		return fmt.Errorf("the audit log %s is a directory: name a file", path)
	case info.Size() > 0:
		return fmt.Errorf("the audit log %s already holds a log: one file holds one cluster's requests; remove it or name another", path)
	}
	return nil
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

// UnmarshalJSON reads an object's metadata; a body that is not an object
// (a JSON patch's list of operations, which a recorded run's policy keeps)
// has none.
func (o *objectMeta) UnmarshalJSON(data []byte) error {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return nil
	}
	type plain objectMeta
	return json.Unmarshal(data, (*plain)(o))
}

// resourceVersion is an object's, "" without one.
func (o *objectMeta) resourceVersion() string {
	if o == nil {
		return ""
	}
	return o.Metadata.ResourceVersion
}

// Log is an audit log file read as the server writes it: each
// ComponentRequests reads only the lines written since the one before and
// keeps their requests by namespace. Every scenario of a run reads the
// log once it ends; reading the whole log each time cost the runner a
// quarter of its CPU on the corpus, the log growing with every scenario.
// Its zero value, with Path, is ready; it is safe for concurrent use.
type Log struct {
	Path string

	mu          sync.Mutex
	offset      int64 // where the next line starts
	line        int   // lines read
	size        int64 // the file's size at the last read
	byNamespace map[string][]cluster.ComponentRequest
	err         error // the first line that was not an event
}

// ComponentRequests is cluster.RequestAuditing's: the components' requests
// to objects of namespace, in the order the server wrote them; nothing when
// the server has written none yet. A log that shrank (a new server writing
// it anew) is read from its start.
func (l *Log) ComponentRequests(namespace string) ([]cluster.ComponentRequest, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.Open(l.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // nothing recorded yet
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() < l.size {
		l.offset, l.line, l.byNamespace, l.err = 0, 0, nil, nil
	}
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return nil, err
	}
	if l.byNamespace == nil {
		l.byNamespace = map[string][]cluster.ComponentRequest{}
	}
	err = readLines(f, func(line []byte) error {
		l.line++
		l.offset += int64(len(line))
		ns, req, ok, err := parse(line, l.line)
		if ok {
			l.byNamespace[ns] = append(l.byNamespace[ns], req)
		}
		return err
	})
	l.size = l.offset
	if err != nil && l.err == nil {
		// Any namespace's requests may have been on that line: every
		// later read says so too, not only this one.
		l.err = err
	}
	return slices.Clone(l.byNamespace[namespace]), l.err
}

// Read reads an audit log: one JSON event per line. A
// last line without its newline, which the server is still writing, is
// left for the next read; any other line that is not an event is an error.
func Read(r io.Reader, namespace string) ([]cluster.ComponentRequest, error) {
	var out []cluster.ComponentRequest
	n := 0
	err := readLines(r, func(line []byte) error {
		n++
		ns, req, ok, err := parse(line, n)
		if ok && ns == namespace {
			out = append(out, req)
		}
		return err
	})
	return out, err
}

// readLines calls each with every whole line of r, its newline included,
// until one returns an error; a last line without its newline is left.
func readLines(r io.Reader, each func(line []byte) error) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return nil // nothing, or a line being written
		}
		if err != nil {
			return err
		}
		if err := each(line); err != nil {
			return err
		}
	}
}

// parse reads line n of an audit log: the namespace and request of a
// component's answered request to a namespaced object, ok; not ok for
// any other event; an error for a line that is not an event.
func parse(line []byte, n int) (string, cluster.ComponentRequest, bool, error) {
	var ev auditEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return "", cluster.ComponentRequest{}, false, fmt.Errorf("audit log line %d: %w", n, err)
	}
	component := identity.Who(ev.User.Username)
	if component == "" || ev.ObjectRef == nil || ev.ObjectRef.Namespace == "" || ev.ResponseStatus == nil {
		return "", cluster.ComponentRequest{}, false, nil
	}
	req := cluster.ComponentRequest{
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
	}
	if ev.ResponseStatus.Code < 300 {
		req.ResourceVersion = ev.ResponseObject.resourceVersion()
	}
	return ev.ObjectRef.Namespace, req, true, nil
}
