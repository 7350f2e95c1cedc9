package gate

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
)

// closeGrace bounds Endpoint.Close.
const closeGrace = 10 * time.Second

// Admission answers the admission requests a webhook server receives: its
// answer to req, sent to path, within ctx (the API server's wait); nil
// writes no answer (the API server stopped waiting). As an http.Handler it
// decodes each AdmissionReview and writes its answer back, and refuses a
// body that is no review with 400.
type Admission func(ctx context.Context, path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

func (a Admission) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	review := &admissionv1.AdmissionReview{}
	if err == nil {
		err = json.Unmarshal(body, review)
	}
	if err != nil || review.Request == nil {
		http.Error(rw, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	resp := a(r.Context(), r.URL.Path, review.Request)
	if resp == nil {
		return
	}
	out, _ := json.Marshal(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(out)
}

// Endpoint is one admission webhook server of this process as the API
// server reaches it: served over TLS on a free port of a host, with the
// CA the API server trusts it by. The gates (and the shaker's delays) have
// one, the scenario webhooks (sim/webhooks) another.
type Endpoint struct {
	host   string
	port   int
	ca     []byte
	server *http.Server
	mu     sync.Mutex
	// serveErr is why the server stopped serving, if it did.
	serveErr error
}

// Serve serves handler over TLS on a free port of host, with the
// certificate (tls.crt, tls.key) in certDir, which ca (the API server's
// trust for it) signed.
func Serve(host, certDir string, ca []byte, handler http.Handler) (*Endpoint, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("failed to load the serving certificate: %w", err)
	}
	l, err := tls.Listen("tcp", net.JoinHostPort(host, "0"), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, fmt.Errorf("failed to listen on %s: %w", host, err)
	}
	e := &Endpoint{host: host, port: l.Addr().(*net.TCPAddr).Port, ca: ca}
	e.server = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := e.server.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			e.mu.Lock()
			e.serveErr = err
			e.mu.Unlock()
		}
	}()
	return e, nil
}

// ClientConfig is how a webhook configuration reaches path on the endpoint.
func (e *Endpoint) ClientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	url := "https://" + net.JoinHostPort(e.host, strconv.Itoa(e.port)) + path
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: e.ca}
}

// Err is why the endpoint stopped serving; nil while it serves.
func (e *Endpoint) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.serveErr
}

// Close stops serving, giving the requests in flight a grace period.
func (e *Endpoint) Close() error {
	if e.server == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	return e.server.Shutdown(ctx)
}
