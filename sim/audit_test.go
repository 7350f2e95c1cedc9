package sim

import (
	"os"
	"path/filepath"
	"testing"
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
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := readComponentRequests(f, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("read %d requests (%+v), want Kueue's two in ns", len(got), got)
	}
	if r := got[0]; r.Component != "kueue" || r.Verb != "update" || r.Name != "llm" || r.Resource != "trainjobs" || r.Code != 200 {
		t.Errorf("first request %+v, want Kueue's update answered 200", r)
	}
	if r := got[1]; r.Verb != "patch" || r.Code != 409 || r.Reason != "Conflict" || r.Message == "" || !r.At.After(got[0].At) {
		t.Errorf("second request %+v, want Kueue's patch refused 409 Conflict with the message, later", r)
	}
}
