package audit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditpolicy "k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trainersim/trainersim/sim/identity"
)

// TestReadComponentRequests: of an audit log, the components' requests to
// objects of the namespace are read with the answer's code, reason and
// message; other users, other namespaces and a line cut short are not.
func TestReadComponentRequests(t *testing.T) {
	log := `{"kind":"Event","verb":"update","user":{"username":"system:serviceaccount:kueue-system:kueue-controller-manager"},"objectRef":{"resource":"trainjobs","namespace":"ns","name":"llm"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"metadata":{"resourceVersion":"41"}},"responseObject":{"metadata":{"resourceVersion":"42"}},"stageTimestamp":"2026-11-24T10:00:00.000001Z"}
{"kind":"Event","verb":"patch","user":{"username":"system:serviceaccount:kueue-system:kueue-controller-manager"},"objectRef":{"resource":"trainjobs","namespace":"ns","name":"llm"},"responseStatus":{"metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on trainjobs.trainer.kubeflow.org \"llm\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","code":409},"requestObject":{"metadata":{"resourceVersion":"42"}},"responseObject":{"metadata":{},"code":409},"stageTimestamp":"2026-11-24T10:00:00.5Z"}
{"kind":"Event","verb":"patch","user":{"username":"system:serviceaccount:kueue-system:kueue-controller-manager"},"objectRef":{"resource":"trainjobs","namespace":"other","name":"llm"},"responseStatus":{"metadata":{},"code":200},"stageTimestamp":"2026-11-24T10:00:01Z"}
{"kind":"Event","verb":"patch","user":{"username":"admin"},"objectRef":{"resource":"trainjobs","namespace":"ns","name":"llm"},"responseStatus":{"metadata":{},"code":200},"stageTimestamp":"2026-11-24T10:00:01Z"}
{"kind":"Event","verb":"patch","user":{"username":"system:serviceaccount:kueue-system:kueue-controller-manager"},"objectRef":{"resource":"trainjobs","namespace":"ns","na`
	got, err := Read(strings.NewReader(log), "ns")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("read %d requests (%+v), want Kueue's two in ns", len(got), got)
	}
	if r := got[0]; r.Component != "kueue" || r.Verb != "update" || r.Name != "llm" || r.Code != 200 || r.SentResourceVersion != "41" || r.ResourceVersion != "42" {
		t.Errorf("first request %+v, want Kueue's update of 41 answered 200, writing 42", r)
	}
	if r := got[1]; r.Verb != "patch" || r.Code != 409 || r.Reason != "Conflict" || r.Message == "" || !r.At.After(got[0].At) || r.SentResourceVersion != "42" || r.ResourceVersion != "" {
		t.Errorf("second request %+v, want Kueue's patch of 42 refused 409 Conflict with the message, later, writing nothing", r)
	}

	// A JSON patch's body, a list of operations (a recorded run's policy
	// keeps every user's bodies), is read as a body without metadata.
	jsonPatch := `{"kind":"Event","verb":"patch","user":{"username":"admin"},"objectRef":{"resource":"trainjobs","namespace":"ns","name":"llm"},"responseStatus":{"metadata":{},"code":200},"requestObject":[{"op":"test","path":"/spec/suspend","value":true}],"stageTimestamp":"2026-11-24T10:00:01Z"}`
	if _, err := Read(strings.NewReader(jsonPatch+"\n"+strings.SplitN(log, "\n", 2)[0]+"\n"), "ns"); err != nil {
		t.Errorf("a JSON patch's body: %v", err)
	}

	// A line that is not an event, other than one being written, is an
	// error that names it: requests are not lost in silence.
	_, err = Read(strings.NewReader("{\"verb\":\"patch\"}\nnot json\n{}\n"), "ns")
	if err == nil || !strings.Contains(err.Error(), "audit log line 2") {
		t.Errorf("a corrupt line: error %v, want one naming line 2", err)
	}
}

// TestAuditPolicy: the API server records, once answered, the writes of the
// users the components run as (with the objects, for TrainJobs), and not
// their leases, events and node heartbeats, nor anybody else's requests.
func TestAuditPolicy(t *testing.T) {
	policy, err := auditpolicy.LoadPolicyFromBytes([]byte(Policy()))
	if err != nil {
		t.Fatal(err)
	}
	kueue, _ := identity.Of(identity.Kueue)
	kwok, _ := identity.Of(identity.Kwok)
	checkLevels(t, Policy(), []levelCase{
		{"Kueue's patch of a TrainJob, with its objects", kueue.User, "patch", "trainer.kubeflow.org", "trainjobs", "", "ns", auditinternal.LevelRequestResponse},
		{"the Trainer's status patch, with its objects", "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager", "patch", "trainer.kubeflow.org", "trainjobs", "status", "ns", auditinternal.LevelRequestResponse},
		{"the Job controller's create of a Pod", "system:serviceaccount:kube-system:job-controller", "create", "", "pods", "", "ns", auditinternal.LevelMetadata},
		{"the scheduler's binding", "system:kube-scheduler", "create", "", "pods", "binding", "ns", auditinternal.LevelMetadata},
		{"KWOK's Pod status", kwok.User, "patch", "", "pods", "status", "ns", auditinternal.LevelMetadata},
		{"KWOK's node heartbeat", kwok.User, "patch", "", "nodes", "status", "", auditinternal.LevelNone},
		{"a lease", kwok.User, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", auditinternal.LevelNone},
		{"an event", kueue.User, "create", "", "events", "", "ns", auditinternal.LevelNone},
		{"a read", kueue.User, "get", "trainer.kubeflow.org", "trainjobs", "", "ns", auditinternal.LevelNone},
		{"an actor's write", "alice", "patch", "trainer.kubeflow.org", "trainjobs", "", "ns", auditinternal.LevelNone},
	})
	if !slices.Equal(policy.OmitStages, []auditinternal.Stage{auditinternal.StageRequestReceived, auditinternal.StageResponseStarted}) {
		t.Errorf("omitStages %v: want the answer only (ResponseComplete, Panic)", policy.OmitStages)
	}
}

// TestRecordPolicy: the policy of a recorded run keeps what Policy
// records, and adds every user's writes to TrainJobs and what they depend
// on, with their objects, and the Pods as they were created; still no
// reads, heartbeats or other resources. Checked with the API server's own
// evaluator.
func TestRecordPolicy(t *testing.T) {
	kueue, _ := identity.Of(identity.Kueue)
	kwok, _ := identity.Of(identity.Kwok)
	checkLevels(t, RecordPolicy(), []levelCase{
		{"an actor's patch of a TrainJob", "alice", "patch", "trainer.kubeflow.org", "trainjobs", "", "ns", auditinternal.LevelRequestResponse},
		{"an actor's delete of a TrainJob", "alice", "delete", "trainer.kubeflow.org", "trainjobs", "", "ns", auditinternal.LevelRequestResponse},
		{"the admin's create of a runtime", "admin", "create", "trainer.kubeflow.org", "trainingruntimes", "", "ns", auditinternal.LevelRequestResponse},
		{"the admin's create of a ClusterTrainingRuntime", "admin", "create", "trainer.kubeflow.org", "clustertrainingruntimes", "", "", auditinternal.LevelRequestResponse},
		{"a ServiceAccount", "admin", "create", "", "serviceaccounts", "", "ns", auditinternal.LevelRequestResponse},
		{"a claim", "admin", "create", "", "persistentvolumeclaims", "", "ns", auditinternal.LevelRequestResponse},
		{"a ConfigMap", "bob", "update", "", "configmaps", "", "ns", auditinternal.LevelRequestResponse},
		{"a ResourceQuota", "admin", "patch", "", "resourcequotas", "", "ns", auditinternal.LevelRequestResponse},
		{"a quota's status, as its controller counted", "system:serviceaccount:kube-system:resourcequota-controller", "update", "", "resourcequotas", "status", "ns", auditinternal.LevelRequestResponse},
		{"a LimitRange", "admin", "create", "", "limitranges", "", "ns", auditinternal.LevelRequestResponse},
		{"a LocalQueue", "admin", "create", "kueue.x-k8s.io", "localqueues", "", "ns", auditinternal.LevelRequestResponse},
		{"a ClusterQueue", "admin", "create", "kueue.x-k8s.io", "clusterqueues", "", "", auditinternal.LevelRequestResponse},
		{"Kueue's patch of a TrainJob, as without recording", kueue.User, "patch", "trainer.kubeflow.org", "trainjobs", "", "ns", auditinternal.LevelRequestResponse},
		{"the Job controller's create of a Pod, with the Pod", "system:serviceaccount:kube-system:job-controller", "create", "", "pods", "", "ns", auditinternal.LevelRequest},
		{"the scheduler's binding, with the node it names", "system:kube-scheduler", "create", "", "pods", "binding", "ns", auditinternal.LevelRequest},
		{"KWOK's Pod status, with its body (the phase)", kwok.User, "patch", "", "pods", "status", "ns", auditinternal.LevelRequest},
		{"KWOK's node heartbeat", kwok.User, "patch", "", "nodes", "status", "", auditinternal.LevelNone},
		{"a namespace's delete, where its scenario ended", "admin", "delete", "", "namespaces", "", "", auditinternal.LevelMetadata},
		{"a namespace's delete, where its scenario ended", "admin", "delete", "", "namespaces", "", "", auditinternal.LevelMetadata},
		{"a node as created", "admin", "create", "", "nodes", "", "", auditinternal.LevelRequest},
		{"a node's update", "admin", "patch", "", "nodes", "", "", auditinternal.LevelNone},
		{"a read", "alice", "get", "trainer.kubeflow.org", "trainjobs", "", "ns", auditinternal.LevelNone},
		{"a Secret", "alice", "create", "", "secrets", "", "ns", auditinternal.LevelNone},
		{"an actor's status write", "alice", "patch", "trainer.kubeflow.org", "trainjobs", "status", "ns", auditinternal.LevelNone},
	})
}

// TestDocumentedRecordPolicy: the policy docs/record.md gives for any
// cluster records what a scenario is rebuilt from, as RecordPolicy does.
func TestDocumentedRecordPolicy(t *testing.T) {
	page, err := os.ReadFile("../../../docs/record.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(page), "```yaml\napiVersion: audit.k8s.io/v1\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatal("docs/record.md has no yaml block of an audit policy")
	}
	checkLevels(t, "apiVersion: audit.k8s.io/v1\n"+block, []levelCase{
		{"a manager's patch of a TrainJob", "alice", "patch", "trainer.kubeflow.org", "trainjobs", "", "ns", auditinternal.LevelRequestResponse},
		{"a runtime", "admin", "update", "trainer.kubeflow.org", "clustertrainingruntimes", "", "", auditinternal.LevelRequestResponse},
		{"a LocalQueue", "admin", "create", "kueue.x-k8s.io", "localqueues", "", "ns", auditinternal.LevelRequestResponse},
		{"a quota's status, as its controller counted", "system:serviceaccount:kube-system:resourcequota-controller", "update", "", "resourcequotas", "status", "ns", auditinternal.LevelRequestResponse},
		{"a LimitRange", "admin", "create", "", "limitranges", "", "ns", auditinternal.LevelRequestResponse},
		{"the Job controller's Pod", "system:serviceaccount:kube-system:job-controller", "create", "", "pods", "", "ns", auditinternal.LevelRequest},
		{"the JobSet controller's status", "system:serviceaccount:kubeflow-system:jobset-controller-manager", "update", "jobset.x-k8s.io", "jobsets", "status", "ns", auditinternal.LevelRequestResponse},
		{"the JobSet controller's Job", "system:serviceaccount:kubeflow-system:jobset-controller-manager", "create", "batch", "jobs", "", "ns", auditinternal.LevelMetadata},
		{"a binding, with the node it names", "system:kube-scheduler", "create", "", "pods", "binding", "ns", auditinternal.LevelRequest},
		{"a kubelet's Pod status", "system:node:n", "patch", "", "pods", "status", "ns", auditinternal.LevelRequest},
		{"a namespace's delete", "admin", "delete", "", "namespaces", "", "", auditinternal.LevelMetadata},
		{"a lease", "system:node:n", "update", "coordination.k8s.io", "leases", "", "kube-node-lease", auditinternal.LevelNone},
		{"a read", "alice", "get", "trainer.kubeflow.org", "trainjobs", "", "ns", auditinternal.LevelNone},
	})
}

// levelCase is a request and the level a policy should record it at.
type levelCase struct {
	name                                         string
	user, verb, group, resource, subresource, ns string
	want                                         auditinternal.Level
}

// checkLevels evaluates each case's request against the policy with the
// API server's own loader and evaluator.
func checkLevels(t *testing.T, text string, cases []levelCase) {
	t.Helper()
	policy, err := auditpolicy.LoadPolicyFromBytes([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	eval := auditpolicy.NewPolicyRuleEvaluator(policy)
	for _, tc := range cases {
		attrs := authorizer.AttributesRecord{
			User: &user.DefaultInfo{Name: tc.user}, Verb: tc.verb, Namespace: tc.ns,
			APIGroup: tc.group, Resource: tc.resource, Subresource: tc.subresource, ResourceRequest: true,
		}
		if got := eval.EvaluatePolicyRule(attrs).Level; got != tc.want {
			t.Errorf("%s: level %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestLogReadsWhatWasAdded: a Log reads the lines written since its last
// read, keeps the earlier ones, leaves a line being written for later,
// and reads a log written anew (shorter) from its start.
func TestLogReadsWhatWasAdded(t *testing.T) {
	event := func(ns, name string) string {
		return `{"kind":"Event","verb":"patch","user":{"username":"system:serviceaccount:kueue-system:kueue-controller-manager"},"objectRef":{"resource":"trainjobs","namespace":"` + ns + `","name":"` + name + `"},"responseStatus":{"metadata":{},"code":200},"stageTimestamp":"2026-11-24T10:00:00Z"}`
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	l := &Log{Path: path}
	names := func(ns string) []string {
		t.Helper()
		reqs, err := l.ComponentRequests(ns)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range reqs {
			out = append(out, r.Name)
		}
		return out
	}
	if got := names("a"); got != nil {
		t.Errorf("no log yet: read %v, want nothing", got)
	}
	write := func(flag int, text string) {
		t.Helper()
		f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	line := event("a", "one") + "\n" + event("b", "two") + "\n"
	cut := event("a", "three")
	write(os.O_APPEND, line+cut[:40])
	if got := names("a"); !slices.Equal(got, []string{"one"}) {
		t.Errorf("first read of a: %v, want [one], the cut line left", got)
	}
	write(os.O_APPEND, cut[40:]+"\n")
	if got := names("a"); !slices.Equal(got, []string{"one", "three"}) {
		t.Errorf("after the line was finished: %v, want [one three]", got)
	}
	if got := names("b"); !slices.Equal(got, []string{"two"}) {
		t.Errorf("b: %v, want [two]", got)
	}
	write(os.O_TRUNC, event("a", "anew")+"\n")
	if got := names("a"); !slices.Equal(got, []string{"anew"}) {
		t.Errorf("a log written anew: %v, want [anew]", got)
	}
	write(os.O_APPEND, "not json\n")
	if _, err := l.ComponentRequests("a"); err == nil || !strings.Contains(err.Error(), "audit log line 2") {
		t.Errorf("a corrupt line: error %v, want one naming line 2", err)
	}
	if _, err := l.ComponentRequests("b"); err == nil || !strings.Contains(err.Error(), "audit log line 2") {
		t.Errorf("a later read of another namespace: error %v, want the corrupt line 2 named again", err)
	}
}
