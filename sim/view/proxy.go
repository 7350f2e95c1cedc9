package view

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
)

// Proxy stands between a component in another process and the API server,
// on loopback: the component is given its address (Kubeconfig) instead of
// the API server's, and every request it sends goes on unchanged, through
// the registry's wrapper, with the component's own identity. A request
// that came with the component's client certificate goes on with it; one
// that came without (kube-controller-manager's controllers, which send
// their service accounts' bearer tokens and no certificate) goes on
// without, its Authorization header as it came. So the API server
// authenticates, authorizes, audits and admits the same user as without
// the proxy, and the component's watches become viewable, JSON and
// protobuf alike.
type Proxy struct {
	// URL is the proxy's address, https on loopback.
	URL string
	// CA is the PEM certificate a component trusts the proxy's serving
	// certificate by.
	CA []byte

	upstream *rest.Config
	srv      *http.Server
}

// contextKey marks a request that came with the component's certificate.
type contextKey struct{}

// Serve starts a proxy of a component whose identity upstream is (its
// rest.Config, with its client certificate): the requests it passes on go
// to upstream.Host.
func (r *Registry) Serve(component string, upstream *rest.Config) (*Proxy, error) {
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("failed to parse the API server's address %s: %w", upstream.Host, err)
	}
	own, err := leafCert(upstream.CertData)
	if err != nil {
		return nil, fmt.Errorf("the identity of %s: %w", component, err)
	}
	withCert, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, err
	}
	anonymous, err := rest.TransportFor(rest.AnonymousClientConfig(upstream))
	if err != nil {
		return nil, err
	}
	wrap := r.Wrap(component)
	rt := &identityTransport{withCert: wrap(withCert), anonymous: wrap(anonymous)}

	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("failed to make the proxy's serving certificate: %w", err)
	}
	serving, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{serving},
		// Asked for, not required: a request without one is passed on
		// without one (a bearer token's).
		ClientAuth: tls.RequestClientCert,
		NextProtos: []string{"h2", "http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to listen for %s: %w", component, err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
			if pr.In.TLS != nil && len(pr.In.TLS.PeerCertificates) > 0 {
				pr.Out = pr.Out.WithContext(context.WithValue(pr.Out.Context(), contextKey{}, true))
			}
		},
		Transport:     rt,
		FlushInterval: -1, // watches: each event as it comes
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if errors.Is(err, errPartitioned) {
				// A partition that refuses: the component's request
				// ends as on a connection the network cut, not with
				// an answer.
				panic(http.ErrAbortHandler)
			}
			// What a client sees of an API server it cannot reach.
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.TLS != nil && len(req.TLS.PeerCertificates) > 0 && !bytes.Equal(req.TLS.PeerCertificates[0].Raw, own.Raw) {
			// Only the component's own certificate is passed on as its.
			http.Error(w, "Unauthorized: a certificate other than "+component+"'s", http.StatusUnauthorized)
			return
		}
		if req.Body != nil && req.Body != http.NoBody {
			// The request's body read whole before it goes on: with
			// HTTP/2 on both sides, when the API server answers before
			// it reads the body (a refusal by authorization does) and
			// the proxy passes the answer on while the body is still
			// being read from the component, Go's HTTP/2 server at
			// times never ends the response: the component waits for
			// its body for good. TestProxyRefusedBeforeTheBody.
			body, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, "failed to read the request's body: "+err.Error(), http.StatusBadRequest)
				return
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, req)
	})
	p := &Proxy{URL: "https://" + ln.Addr().String(), CA: certPEM, upstream: rest.CopyConfig(upstream), srv: &http.Server{Handler: handler, ReadHeaderTimeout: 0}}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the proxy: its connections end, as a component's to an API
// server that went away.
func (p *Proxy) Close() error {
	if err := p.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Kubeconfig returns the component's rest.Config pointed at the proxy: the
// identity it was served with (each start of the component is given the
// same), the proxy's address and CA.
func (p *Proxy) Kubeconfig() *rest.Config {
	cfg := rest.CopyConfig(p.upstream)
	cfg.Host = p.URL
	cfg.CAData, cfg.CAFile, cfg.ServerName, cfg.Insecure = p.CA, "", "", false
	return cfg
}

// identityTransport passes a request on with the component's certificate
// when it came with it, without any when it came without.
type identityTransport struct {
	withCert, anonymous http.RoundTripper
}

func (t *identityTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Context().Value(contextKey{}) != nil {
		return t.withCert.RoundTrip(req)
	}
	return t.anonymous.RoundTrip(req)
}

// leafCert returns the first certificate of PEM data.
func leafCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no client certificate in its rest.Config")
	}
	return x509.ParseCertificate(block.Bytes)
}
