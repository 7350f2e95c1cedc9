package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// apiServer serves watches of TrainJobs: each watch request takes the next
// script of events, written one at a time as the test sends them on its
// channel; a closed channel ends the watch.
type apiServer struct {
	t       *testing.T
	mu      sync.Mutex
	scripts []chan string
	queries []string
}

func newAPIServer(t *testing.T, watches int) (*apiServer, *httptest.Server) {
	a := &apiServer{t: t}
	for range watches {
		a.scripts = append(a.scripts, make(chan string, 16))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		i := len(a.queries)
		a.queries = append(a.queries, r.URL.RawQuery)
		a.mu.Unlock()
		if i >= len(a.scripts) {
			http.Error(w, "no more watches", http.StatusGone)
			return
		}
		w.Header().Set("Content-Type", "application/json;stream=watch")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case ev, ok := <-a.scripts[i]:
				if !ok {
					return
				}
				_, _ = io.WriteString(w, ev+"\n")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return a, srv
}

// ev is a watch event of a TrainJob.
func ev(typ, ns, name, rv string) string {
	return fmt.Sprintf(`{"type":%q,"object":{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":%q,"namespace":%q,"resourceVersion":%q}}}`, typ, name, ns, rv)
}

// got is what the component reads of a watch event.
type got struct{ Type, Name, RV string }

// watch opens a watch of TrainJobs through the registry's wrapper of the
// trainer, and returns its events as they come.
func watch(t *testing.T, reg *Registry, url string) <-chan got {
	t.Helper()
	c := &http.Client{Transport: reg.Wrap("trainer")(http.DefaultTransport)}
	resp, err := c.Get(url + "/apis/trainer.kubeflow.org/v1alpha1/trainjobs?watch=true&resourceVersion=1&allowWatchBookmarks=true")
	if err != nil {
		t.Fatalf("failed to watch: %v", err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	out := make(chan got, 16)
	go func() {
		defer close(out)
		dec := json.NewDecoder(resp.Body)
		for {
			var f struct {
				Type   string
				Object jsonMeta
			}
			if err := dec.Decode(&f); err != nil {
				return
			}
			out <- got{f.Type, f.Object.Metadata.Name, f.Object.Metadata.ResourceVersion}
		}
	}()
	return out
}

// next returns the next event the component reads, or fails after a
// second.
func next(t *testing.T, c <-chan got) got {
	t.Helper()
	select {
	case g, ok := <-c:
		if !ok {
			t.Fatal("the watch ended")
		}
		return g
	case <-time.After(time.Second):
		t.Fatal("no event within 1s")
	}
	return got{}
}

// none fails when the component reads an event within a short while.
func none(t *testing.T, c <-chan got) {
	t.Helper()
	select {
	case g, ok := <-c:
		if ok {
			t.Fatalf("the component got %+v, want nothing yet", g)
		}
	case <-time.After(100 * time.Millisecond):
	}
}

// waitHolding waits until the view keeps n events back.
func waitHolding(t *testing.T, reg *Registry, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for len(reg.Holding(name)) != n {
		if time.Now().After(deadline) {
			t.Fatalf("view %s keeps %d events back, want %d", name, len(reg.Holding(name)), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHoldDeliversInOrderAtRelease(t *testing.T) {
	a, srv := newAPIServer(t, 1)
	reg := NewRegistry(nil)
	if err := reg.Register(View{Name: "v", Component: "trainer", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "ns", ObjectName: "low"}); err != nil {
		t.Fatal(err)
	}
	c := watch(t, reg, srv.URL)
	s := a.scripts[0]
	s <- ev("ADDED", "ns", "low", "2")
	s <- ev("MODIFIED", "ns", "low", "3")
	s <- ev("ADDED", "ns", "high", "4")   // another object: goes on
	s <- ev("ADDED", "other", "low", "5") // another namespace: goes on
	if diff := cmp.Diff(got{"ADDED", "high", "4"}, next(t, c)); diff != "" {
		t.Errorf("first event mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(got{"ADDED", "low", "5"}, next(t, c)); diff != "" {
		t.Errorf("second event mismatch (-want +got):\n%s", diff)
	}
	none(t, c)
	waitHolding(t, reg, "v", 2)
	if n := reg.Release("v", "released"); n != 2 {
		t.Errorf("Release = %d, want 2", n)
	}
	want := []got{{"ADDED", "low", "2"}, {"MODIFIED", "low", "3"}}
	for i, w := range want {
		if diff := cmp.Diff(w, next(t, c)); diff != "" {
			t.Errorf("released event %d mismatch (-want +got):\n%s", i, diff)
		}
	}
	s <- ev("MODIFIED", "ns", "low", "6") // after the release: goes on
	if diff := cmp.Diff(got{"MODIFIED", "low", "6"}, next(t, c)); diff != "" {
		t.Errorf("event after the release mismatch (-want +got):\n%s", diff)
	}
	var fates []string
	for _, e := range reg.Events("v") {
		fates = append(fates, e.Type+" "+e.ResourceVersion+": "+e.Fate)
	}
	if diff := cmp.Diff([]string{"ADDED 2: released", "MODIFIED 3: released"}, fates); diff != "" {
		t.Errorf("view's events mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"trainer.kubeflow.org/trainjobs"}, reg.Watched("trainer")); diff != "" {
		t.Errorf("Watched mismatch (-want +got):\n%s", diff)
	}
}

func TestCoalesce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string
		want   []got
	}{
		{"modified twice: the last state", []string{ev("MODIFIED", "ns", "a", "2"), ev("MODIFIED", "ns", "a", "3")}, []got{{"MODIFIED", "a", "3"}}},
		{"added then modified: added, last state", []string{ev("ADDED", "ns", "a", "2"), ev("MODIFIED", "ns", "a", "3")}, []got{{"ADDED", "a", "3"}}},
		{"added then deleted: nothing", []string{ev("ADDED", "ns", "a", "2"), ev("DELETED", "ns", "a", "3")}, nil},
		{"modified then deleted: deleted", []string{ev("MODIFIED", "ns", "a", "2"), ev("DELETED", "ns", "a", "3")}, []got{{"DELETED", "a", "3"}}},
		{"two objects: in the order of their last", []string{ev("MODIFIED", "ns", "a", "2"), ev("MODIFIED", "ns", "b", "3"), ev("MODIFIED", "ns", "a", "4")}, []got{{"MODIFIED", "b", "3"}, {"MODIFIED", "a", "4"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, srv := newAPIServer(t, 1)
			reg := NewRegistry(nil)
			if err := reg.Register(View{Name: "v", Component: "trainer", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "ns", Coalesce: true}); err != nil {
				t.Fatal(err)
			}
			c := watch(t, reg, srv.URL)
			for _, e := range tc.events {
				a.scripts[0] <- e
			}
			waitHolding(t, reg, "v", len(tc.events))
			reg.Release("v", "released")
			a.scripts[0] <- ev("MODIFIED", "ns", "z", "9") // a marker after the release
			var gots []got
			for g := next(t, c); g.Name != "z"; g = next(t, c) {
				gots = append(gots, g)
			}
			if diff := cmp.Diff(tc.want, gots); diff != "" {
				t.Errorf("delivered mismatch (-want +got):\n%s", diff)
			}
			coalesced := 0
			for _, e := range reg.Events("v") {
				if e.Fate == Coalesced {
					coalesced++
				}
			}
			if want := len(tc.events) - len(tc.want); coalesced != want {
				t.Errorf("%d events coalesced, want %d", coalesced, want)
			}
		})
	}
}

// CaughtUp waits for the change the harness saw to reach the watch that
// keeps the object's events back, so that a release after it delivers the
// two changes as one; it ends at once for objects the view kept nothing
// of, and with ctx, naming the watch behind.
func TestCaughtUp(t *testing.T) {
	a, srv := newAPIServer(t, 1)
	reg := NewRegistry(nil)
	if err := reg.Register(View{Name: "v", Component: "trainer", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "ns", Coalesce: true}); err != nil {
		t.Fatal(err)
	}
	c := watch(t, reg, srv.URL)
	a.scripts[0] <- ev("MODIFIED", "ns", "low", "5")
	waitHolding(t, reg, "v", 1)

	if err := reg.CaughtUp(t.Context(), "v", map[string]string{"ns/low": "5", "ns/other": "9"}); err != nil {
		t.Errorf("CaughtUp with the watch at the change: %v", err)
	}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := reg.CaughtUp(short, "v", map[string]string{"ns/low": "7"})
	if want := "trainer's watch of trainjobs has read up to resourceVersion 5, ns/low is at 7"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CaughtUp with the watch behind: %v, want an error with %q", err, want)
	}

	done := make(chan error, 1)
	go func() { done <- reg.CaughtUp(t.Context(), "v", map[string]string{"ns/low": "7"}) }()
	select {
	case err := <-done:
		t.Fatalf("CaughtUp returned (%v) before the watch read the change", err)
	case <-time.After(50 * time.Millisecond):
	}
	a.scripts[0] <- ev("MODIFIED", "ns", "other", "6") // another object's event: still behind
	a.scripts[0] <- ev("MODIFIED", "ns", "low", "7")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("CaughtUp: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("CaughtUp did not return within 1s of the watch reading the change")
	}
	reg.Release("v", "released")
	if g := next(t, c); g != (got{"MODIFIED", "other", "6"}) {
		t.Errorf("first delivered %v, want other's change", g)
	}
	if g := next(t, c); g != (got{"MODIFIED", "low", "7"}) {
		t.Errorf("then %v, want low's two changes as one, at 7", g)
	}
	none(t, c)
}

func TestDelay(t *testing.T) {
	a, srv := newAPIServer(t, 1)
	reg := NewRegistry(nil)
	const delay = 200 * time.Millisecond
	if err := reg.Register(View{Name: "v", Component: "trainer", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "ns", Delay: delay}); err != nil {
		t.Fatal(err)
	}
	c := watch(t, reg, srv.URL)
	sent := time.Now()
	a.scripts[0] <- ev("MODIFIED", "ns", "a", "2")
	a.scripts[0] <- ev("MODIFIED", "ns", "b", "3")
	for _, want := range []got{{"MODIFIED", "a", "2"}, {"MODIFIED", "b", "3"}} {
		if diff := cmp.Diff(want, next(t, c)); diff != "" {
			t.Errorf("delayed event mismatch (-want +got):\n%s", diff)
		}
	}
	if since := time.Since(sent); since < delay {
		t.Errorf("delivered after %s, want at least %s", since, delay)
	}
}

// TestResumeWhileHolding: the API server ends the watch while the view
// holds events; the component sees one stream, resumed from the last
// resourceVersion read, and the stream's end only after the release.
func TestResumeWhileHolding(t *testing.T) {
	a, srv := newAPIServer(t, 2)
	reg := NewRegistry(nil)
	if err := reg.Register(View{Name: "v", Component: "trainer", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "ns", ObjectName: "low"}); err != nil {
		t.Fatal(err)
	}
	c := watch(t, reg, srv.URL)
	a.scripts[0] <- ev("MODIFIED", "ns", "low", "2")
	a.scripts[0] <- ev("MODIFIED", "ns", "high", "3")
	if diff := cmp.Diff(got{"MODIFIED", "high", "3"}, next(t, c)); diff != "" {
		t.Errorf("event mismatch (-want +got):\n%s", diff)
	}
	close(a.scripts[0]) // the watch's timeout
	a.scripts[1] <- ev("MODIFIED", "ns", "high", "4")
	if diff := cmp.Diff(got{"MODIFIED", "high", "4"}, next(t, c)); diff != "" {
		t.Errorf("event of the resumed watch mismatch (-want +got):\n%s", diff)
	}
	a.mu.Lock()
	resumed := a.queries[1]
	a.mu.Unlock()
	if !strings.Contains(resumed, "resourceVersion=3") {
		t.Errorf("the resumed watch's query is %s, want resourceVersion=3", resumed)
	}
	reg.Release("v", "released")
	if diff := cmp.Diff(got{"MODIFIED", "low", "2"}, next(t, c)); diff != "" {
		t.Errorf("released event mismatch (-want +got):\n%s", diff)
	}
	close(a.scripts[1]) // nothing held: the component's stream ends
	select {
	case g, ok := <-c:
		if ok {
			t.Errorf("got %+v, want the end of the watch", g)
		}
	case <-time.After(time.Second):
		t.Error("the watch did not end")
	}
}

// TestErrorEventWaitsForRelease: an ERROR event, which ends a watch that
// cannot resume, reaches the component after what the view holds.
func TestErrorEventWaitsForRelease(t *testing.T) {
	a, srv := newAPIServer(t, 1)
	reg := NewRegistry(nil)
	if err := reg.Register(View{Name: "v", Component: "trainer", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "ns"}); err != nil {
		t.Fatal(err)
	}
	c := watch(t, reg, srv.URL)
	a.scripts[0] <- ev("MODIFIED", "ns", "a", "2")
	a.scripts[0] <- `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":410,"reason":"Expired"}}`
	close(a.scripts[0])
	none(t, c)
	reg.Release("v", "released")
	for _, want := range []got{{"MODIFIED", "a", "2"}, {"ERROR", "", ""}} {
		if diff := cmp.Diff(want, next(t, c)); diff != "" {
			t.Errorf("event mismatch (-want +got):\n%s", diff)
		}
	}
}

// TestComponentStopsWatching: a component that closes its watch while the
// view holds events never gets them, and the view says so.
func TestComponentStopsWatching(t *testing.T) {
	a, srv := newAPIServer(t, 1)
	reg := NewRegistry(nil)
	if err := reg.Register(View{Name: "v", Component: "trainer", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "ns"}); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: reg.Wrap("trainer")(http.DefaultTransport)}
	resp, err := c.Get(srv.URL + "/apis/trainer.kubeflow.org/v1alpha1/trainjobs?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	a.scripts[0] <- ev("MODIFIED", "ns", "a", "2")
	waitHolding(t, reg, "v", 1)
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for len(reg.Holding("v")) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the view still holds the event of a closed watch")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if e := reg.Events("v"); len(e) != 1 || !strings.HasPrefix(e[0].Fate, "never delivered") {
		t.Errorf("events = %+v, want one never delivered", e)
	}
	close(a.scripts[0])
}

// TestOnlyWatchesAreViewed: a list and another component's watch pass
// untouched.
func TestOnlyWatchesAreViewed(t *testing.T) {
	a, srv := newAPIServer(t, 1)
	reg := NewRegistry(nil)
	if err := reg.Register(View{Name: "v", Component: "jobset", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "ns"}); err != nil {
		t.Fatal(err)
	}
	c := watch(t, reg, srv.URL) // the trainer's
	a.scripts[0] <- ev("MODIFIED", "ns", "a", "2")
	if diff := cmp.Diff(got{"MODIFIED", "a", "2"}, next(t, c)); diff != "" {
		t.Errorf("event mismatch (-want +got):\n%s", diff)
	}
	if got := reg.Watched("jobset"); len(got) != 0 {
		t.Errorf("Watched(jobset) = %v, want none", got)
	}
}

// TestStaleList serves the component's first list after the view started
// as of the view's resourceVersion, refuses its watch-list before it as an
// API server without WatchList does, and leaves what follows alone.
func TestStaleList(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"TrainJobList","apiVersion":"trainer.kubeflow.org/v1alpha1","metadata":{"resourceVersion":"5"},"items":[]}`)
	}))
	t.Cleanup(srv.Close)
	reg := NewRegistry(nil)
	if err := reg.Register(View{Name: "v", Component: "trainer", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "ns", StaleAt: "5"}); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: reg.Wrap("trainer")(http.DefaultTransport)}
	status := func(query string) int {
		t.Helper()
		resp, err := c.Get(srv.URL + "/apis/trainer.kubeflow.org/v1alpha1/trainjobs?" + query)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"); got != http.StatusUnprocessableEntity {
		t.Errorf("watch-list: %d, want 422", got)
	}
	for range 2 {
		if got := status("limit=500&resourceVersion=0"); got != http.StatusOK {
			t.Errorf("list: %d, want 200", got)
		}
	}
	want := []string{"limit=500&resourceVersion=5&resourceVersionMatch=Exact", "limit=500&resourceVersion=0"}
	if diff := cmp.Diff(want, queries); diff != "" {
		t.Errorf("what the API server was asked (-want +got):\n%s", diff)
	}
	lists := reg.StaleLists("v")
	if len(lists) != 1 || lists[0].ResourceVersion != "5" || lists[0].Status != "200 OK" {
		t.Errorf("StaleLists = %+v, want one list as of 5, 200 OK", lists)
	}
}

// TestPartitionRefuse cuts the component off: its open watch ends, its
// requests fail as a refused dial, and after the release they go on.
func TestPartitionRefuse(t *testing.T) {
	a, srv := newAPIServer(t, 2)
	reg := NewRegistry(nil)
	c := watch(t, reg, srv.URL)
	a.scripts[0] <- ev("ADDED", "ns", "a", "2")
	next(t, c)
	if err := reg.Register(View{Name: "cut", Component: "trainer", Partition: PartitionRefuse}); err != nil {
		t.Fatal(err)
	}
	select {
	case g, ok := <-c:
		if ok {
			t.Fatalf("the watch delivered %+v after the cut, want its end", g)
		}
	case <-time.After(time.Second):
		t.Fatal("the open watch did not end at the cut")
	}
	client := &http.Client{Transport: reg.Wrap("trainer")(http.DefaultTransport)}
	_, err := client.Get(srv.URL + "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/a")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a request while cut off: %v, want connection refused", err)
	}
	if events := reg.Events("cut"); len(events) != 1 || events[0].Type != EventRequestRefused {
		t.Errorf("Events = %+v, want one refused request", events)
	}
	reg.Release("cut", "healed")
	c = watch(t, reg, srv.URL)
	a.scripts[1] <- ev("ADDED", "ns", "b", "3")
	if diff := cmp.Diff(got{"ADDED", "b", "3"}, next(t, c)); diff != "" {
		t.Errorf("a watch after the release (-want +got):\n%s", diff)
	}
}

// TestPartitionUnanswered leaves the component's requests waiting and
// keeps back what its open watch brings, until the release.
func TestPartitionUnanswered(t *testing.T) {
	a, srv := newAPIServer(t, 2)
	reg := NewRegistry(nil)
	c := watch(t, reg, srv.URL)
	if err := reg.Register(View{Name: "cut", Component: "trainer", Partition: PartitionUnanswered}); err != nil {
		t.Fatal(err)
	}
	a.scripts[0] <- ev("MODIFIED", "other", "x", "4") // any namespace, any object
	answered := make(chan error, 1)
	go func() {
		client := &http.Client{Transport: reg.Wrap("trainer")(http.DefaultTransport)}
		resp, err := client.Get(srv.URL + "/apis/trainer.kubeflow.org/v1alpha1/trainjobs?watch=true")
		if err == nil {
			_ = resp.Body.Close()
		}
		answered <- err
	}()
	waitHolding(t, reg, "cut", 2)
	none(t, c)
	select {
	case err := <-answered:
		t.Fatalf("the request was answered while cut off: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if n := reg.Release("cut", "healed"); n != 2 {
		t.Errorf("Release = %d, want 2 (the event and the request)", n)
	}
	if diff := cmp.Diff(got{"MODIFIED", "x", "4"}, next(t, c)); diff != "" {
		t.Errorf("the event kept back (-want +got):\n%s", diff)
	}
	select {
	case err := <-answered:
		if err != nil {
			t.Errorf("the request after the release: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("the request was not sent on at the release")
	}
}

// TestStaleListHoldsTheWatchAfterIt: a stale list's view keeps nothing back
// of a watch opened before its list, and keeps back what the watch after
// the list brings.
func TestStaleListHoldsTheWatchAfterIt(t *testing.T) {
	a, watches := newAPIServer(t, 2)
	lists := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"TrainJobList","apiVersion":"trainer.kubeflow.org/v1alpha1","metadata":{"resourceVersion":"5"},"items":[]}`)
	}))
	t.Cleanup(lists.Close)
	reg := NewRegistry(nil)
	before := watch(t, reg, watches.URL)
	if err := reg.Register(View{Name: "v", Component: "trainer", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "ns", StaleAt: "5"}); err != nil {
		t.Fatal(err)
	}
	a.scripts[0] <- ev("MODIFIED", "ns", "a", "6")
	if diff := cmp.Diff(got{"MODIFIED", "a", "6"}, next(t, before)); diff != "" {
		t.Errorf("a watch opened before the stale list (-want +got):\n%s", diff)
	}
	client := &http.Client{Transport: reg.Wrap("trainer")(http.DefaultTransport)}
	resp, err := client.Get(lists.URL + "/apis/trainer.kubeflow.org/v1alpha1/trainjobs")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	after := watch(t, reg, watches.URL)
	a.scripts[1] <- ev("MODIFIED", "ns", "a", "6") // the events since the list's resourceVersion
	waitHolding(t, reg, "v", 1)
	none(t, after)
	reg.Release("v", "released")
	if diff := cmp.Diff(got{"MODIFIED", "a", "6"}, next(t, after)); diff != "" {
		t.Errorf("the watch after the stale list, at the release (-want +got):\n%s", diff)
	}
}
