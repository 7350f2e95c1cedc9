package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/internal/proclog"
)

var trainJobs = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}

// warningServer answers every create of a TrainJob with 201 and one
// warning per unknown field the object has (the keys of spec other than
// runtimeRef), and holds each answer until `together` creates are in
// flight, so that they are answered at the same time. A read gets one
// warning.
func warningServer(t *testing.T, together int) *httptest.Server {
	t.Helper()
	var arrived sync.WaitGroup
	arrived.Add(together)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Add("Warning", `299 - "a warning on a read"`)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "job"}}`))
			return
		}
		body, _ := io.ReadAll(r.Body)
		var obj map[string]any
		if err := json.Unmarshal(body, &obj); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		spec, _ := obj["spec"].(map[string]any)
		for k := range spec {
			if k != "runtimeRef" {
				w.Header().Add("Warning", fmt.Sprintf(`299 - "unknown field \"spec.%s\""`, k))
			}
		}
		arrived.Done()
		arrived.Wait()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestConcurrentWritesGetTheirOwnWarnings sends two creates released
// together through clients set up as the actors' are: the server answers
// both at once, each with warnings of its own, and each write records
// exactly its own.
func TestConcurrentWritesGetTheirOwnWarnings(t *testing.T) {
	srv := warningServer(t, 2)
	// Two actors, two clients, as newActor makes them.
	var clients []dynamic.Interface
	for range 2 {
		c, err := dynamic.NewForConfig(recordingAnswers(&rest.Config{Host: srv.URL}))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	s := &scenarioRun{clock: clock.RealClock{}, objects: map[string]map[string]any{}}
	fields := [][]string{{"imageTypo", "commandTypo"}, {"suspended"}}
	var preps []*prepared
	for i, unknown := range fields {
		spec := map[string]any{"runtimeRef": map[string]any{"name": "torch-distributed"}}
		for _, f := range unknown {
			spec[f] = true
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
			"metadata": map[string]any{"name": fmt.Sprintf("job-%d", i), "namespace": "ns"},
			"spec":     spec,
		}}
		ri := clients[i].Resource(trainJobs).Namespace("ns")
		preps = append(preps, &prepared{
			write: results.Write{Verb: "create"},
			do: func(ctx context.Context) (*unstructured.Unstructured, error) {
				return ri.Create(ctx, u, metav1.CreateOptions{})
			},
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := releaseTogether([]func() error{
		func() error { return s.send(ctx, preps[0], "first") },
		func() error { return s.send(ctx, preps[1], "second") },
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	for i, unknown := range fields {
		var want []string
		for _, f := range unknown {
			want = append(want, fmt.Sprintf(`unknown field "spec.%s"`, f))
		}
		got := preps[i].write.Warnings
		if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("write %d: warnings mismatch (-want +got):\n%s", i, diff)
		}
		if status := preps[i].write.Status; status != http.StatusCreated {
			t.Errorf("write %d: status %d, want the 201 the server answered", i, status)
		}
	}
}

// TestWarningOutsideAWrite: a request that is no write's (an expectation's
// read) records nothing on a write and goes to client-go's default handler,
// klog, which simctl routes to a log file (proclog).
func TestWarningOutsideAWrite(t *testing.T) {
	proclog.Install()
	var processLog bytes.Buffer
	detach := proclog.Attach(&processLog)
	defer detach()
	srv := warningServer(t, 1)
	c, err := dynamic.NewForConfig(recordingAnswers(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	_, write := withAnswers(context.Background())
	if _, err := c.Resource(trainJobs).Namespace("ns").Get(context.Background(), "job", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := write.warnings(); len(got) != 0 {
		t.Errorf("a write recorded the warning of a request outside it: %q", got)
	}
	if !strings.Contains(processLog.String(), "Warning: a warning on a read") {
		t.Errorf("the process log lacks the read's warning:\n%s", processLog.String())
	}
}

func TestAnswersKeepTheLastStatusAndTheAPIServersWarningsOnly(t *testing.T) {
	_, a := withAnswers(context.Background())
	resp := func(status int, warnings ...string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Warning": warnings}}
	}
	a.record(resp(http.StatusOK, `299 - "unknown field \"spec.x\""`, `199 proxy "miscellaneous warning"`)) // 199: not the API server's code
	a.record(resp(http.StatusCreated, `299 - ""`, `299 - "second"`))
	if diff := cmp.Diff([]string{`unknown field "spec.x"`, "second"}, a.warnings()); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
	if got := a.lastStatus(); got != http.StatusCreated {
		t.Errorf("last status %d, want 201", got)
	}
}
