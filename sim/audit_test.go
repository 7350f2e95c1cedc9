package sim

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestReadComponentRequests: of an audit log, the components' requests to
// objects of the namespace are read with the answer's code, reason and
// message; other users, other namespaces and a line cut short are not.
func TestReadComponentRequests(t *testing.T) {
	log := `{"kind":"Event","verb":"update","user":{"username":"system:kueue"},"objectRef":{"resource":"trainjobs","namespace":"ns","name":"llm"},"responseStatus":{"metadata":{},"code":200},"stageTimestamp":"2026-11-24T10:00:00.000001Z"}
{"kind":"Event","verb":"patch","user":{"username":"system:kueue"},"objectRef":{"resource":"trainjobs","namespace":"ns","name":"llm"},"responseStatus":{"metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on trainjobs.trainer.kubeflow.org \"llm\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","code":409},"stageTimestamp":"2026-11-24T10:00:00.5Z"}
{"kind":"Event","verb":"patch","user":{"username":"system:kueue"},"objectRef":{"resource":"trainjobs","namespace":"other","name":"llm"},"responseStatus":{"metadata":{},"code":200},"stageTimestamp":"2026-11-24T10:00:01Z"}
{"kind":"Event","verb":"patch","user":{"username":"admin"},"objectRef":{"resource":"trainjobs","namespace":"ns","name":"llm"},"responseStatus":{"metadata":{},"code":200},"stageTimestamp":"2026-11-24T10:00:01Z"}
{"kind":"Event","verb":"patch","user":{"username":"system:kueue"},"objectRef":{"resource":"trainjobs","namespace":"ns","na`
	got, err := readComponentRequests(strings.NewReader(log), "ns")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("read %d requests (%+v), want Kueue's two in ns", len(got), got)
	}
	if r := got[0]; r.Component != "kueue" || r.Verb != "update" || r.Name != "llm" || r.Code != 200 {
		t.Errorf("first request %+v, want Kueue's update answered 200", r)
	}
	if r := got[1]; r.Verb != "patch" || r.Code != 409 || r.Reason != "Conflict" || r.Message == "" || !r.At.After(got[0].At) {
		t.Errorf("second request %+v, want Kueue's patch refused 409 Conflict with the message, later", r)
	}

	// A line that is not an event, other than one being written, is an
	// error that names it: requests are not lost in silence.
	_, err = readComponentRequests(strings.NewReader("{\"verb\":\"patch\"}\nnot json\n{}\n"), "ns")
	if err == nil || !strings.Contains(err.Error(), "audit log line 2") {
		t.Errorf("a corrupt line: error %v, want one naming line 2", err)
	}
}

// TestAuditPolicy: the API server records, once answered, the writes to
// TrainJobs of the users the components run as, and nothing else.
func TestAuditPolicy(t *testing.T) {
	var policy struct {
		OmitStages []string `json:"omitStages"`
		Rules      []struct {
			Level     string   `json:"level"`
			Users     []string `json:"users"`
			Verbs     []string `json:"verbs"`
			Resources []struct {
				Group     string   `json:"group"`
				Resources []string `json:"resources"`
			} `json:"resources"`
		} `json:"rules"`
	}
	if err := yaml.Unmarshal([]byte(auditPolicy()), &policy); err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, c := range Components {
		users = append(users, ComponentUser(c))
	}
	if len(policy.Rules) != 2 || policy.Rules[1].Level != "None" || len(policy.Rules[1].Users) != 0 {
		t.Fatalf("rules %+v: want one Metadata rule, then None for everything else", policy.Rules)
	}
	r := policy.Rules[0]
	if r.Level != "Metadata" || !slices.Equal(r.Users, users) || !slices.Equal(r.Verbs, []string{"create", "update", "patch", "delete"}) ||
		len(r.Resources) != 1 || r.Resources[0].Group != "trainer.kubeflow.org" || !slices.Equal(r.Resources[0].Resources, []string{"trainjobs"}) {
		t.Errorf("first rule %+v: want Metadata for the writes of %v to trainjobs", r, users)
	}
	if !slices.Equal(policy.OmitStages, []string{"RequestReceived", "ResponseStarted"}) {
		t.Errorf("omitStages %v: want the answer only (ResponseComplete, Panic)", policy.OmitStages)
	}
}
