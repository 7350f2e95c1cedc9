package envtest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/proc"
)

// TestKillSwitch: a kill fails the requests in flight (a watch's body
// read among them) and every request after it; before it, requests go on.
func TestKillSwitch(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // a watch: the body never ends on its own
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	k := newKillSwitch()
	c := &http.Client{Transport: k.wrap(http.DefaultTransport)}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatalf("a request before the kill failed: %v", err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		read <- err
	}()
	k.kill()
	select {
	case err := <-read:
		if err == nil {
			t.Error("the watch's body read ended without an error at the kill")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the kill did not end the request in flight")
	}
	if _, err := c.Get(srv.URL); !errors.Is(err, errCrashed) {
		t.Errorf("a request after the kill: %v, want %v", err, errCrashed)
	}
}

// TestProcessComponentPart: the part of a process component that runs in
// this process (KWOK's volume manager) starts once the process is ready,
// is down as soon as a crash or a stop has ended the process, and starts
// again, anew, with the next process.
func TestProcessComponentPart(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	var starts, stops int
	up := func() bool { return starts > stops }
	c := &processComponent{
		component: "kwok",
		start: func(int) (*proc.Process, error) {
			p := &proc.Process{Name: "sleep", Path: sleep, Args: []string{"60"}}
			return p, p.Start()
		},
		ready: func(context.Context) error {
			if up() {
				t.Error("the part started before the process was ready")
			}
			return nil
		},
		part: &inProcessPart{run: func(context.Context) (func(), error) {
			starts++
			return func() { stops++ }, nil
		}},
	}
	ctx := t.Context()
	if err := c.run(ctx); err != nil {
		t.Fatal(err)
	}
	if !up() {
		t.Fatal("the process is ready and its part is not running")
	}
	for _, down := range []string{cluster.ComponentCrash, cluster.ComponentStop} {
		c.mu.Lock()
		p := c.p
		c.mu.Unlock()
		if err := c.act(ctx, down); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.Exited():
		default:
			if down == cluster.ComponentCrash {
				t.Errorf("%s returned before the process ended", down)
			}
		}
		if up() {
			t.Errorf("after a %s of the process its part still runs", down)
		}
		if err := c.act(ctx, cluster.ComponentStart); err != nil {
			t.Fatal(err)
		}
		if !up() {
			t.Errorf("started again after a %s, the part is not running", down)
		}
	}
	if starts != 3 || stops != 2 {
		t.Errorf("the part started %d times and stopped %d, want 3 and 2", starts, stops)
	}
	c.part.halt()
	c.mu.Lock()
	c.p.Kill()
	c.mu.Unlock()
}
