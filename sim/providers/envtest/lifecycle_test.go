package envtest

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
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
