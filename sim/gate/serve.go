package gate

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"
)

// ServeTLS serves handler over TLS on a free port of host, with the
// certificate (tls.crt, tls.key) in certDir: the way the API server reaches
// the admission webhooks of this process (gates, delays, scenario
// webhooks). It returns the server and its port; failed, when the server
// stops serving for any reason but Shutdown, receives why.
func ServeTLS(host, certDir string, handler http.Handler, failed func(error)) (*http.Server, int, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	if err != nil {
		return nil, 0, fmt.Errorf("failed to load the serving certificate: %w", err)
	}
	l, err := tls.Listen("tcp", net.JoinHostPort(host, "0"), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, 0, fmt.Errorf("failed to listen on %s: %w", host, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			failed(err)
		}
	}()
	return srv, l.Addr().(*net.TCPAddr).Port, nil
}
