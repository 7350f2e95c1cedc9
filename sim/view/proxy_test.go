package view

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

// issuer signs client certificates, as the API server's client CA.
type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &issuer{cert: cert, key: key}
}

// client returns the PEM certificate and key of a user.
func (i *issuer) client(t *testing.T, user string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: user}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, i.cert, &key.PublicKey, i.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// TestProxyKeepsIdentity sends requests through a component's proxy: the
// API server sees the component's certificate on those that came with it,
// the bearer token alone on those that came with one, and a request with
// another user's certificate is refused.
func TestProxyKeepsIdentity(t *testing.T) {
	ca := newIssuer(t)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	apiServer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := "anonymous"
		if len(r.TLS.PeerCertificates) > 0 {
			user = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		_, _ = fmt.Fprintf(w, "%s %s %s %s", r.Method, r.URL.RequestURI(), user, r.Header.Get("Authorization"))
	}))
	apiServer.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	apiServer.StartTLS()
	t.Cleanup(apiServer.Close)
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: apiServer.Certificate().Raw})

	certPEM, keyPEM := ca.client(t, "system:kube-scheduler")
	upstream := &rest.Config{Host: apiServer.URL, TLSClientConfig: rest.TLSClientConfig{CAData: serverCA, CertData: certPEM, KeyData: keyPEM}}
	reg := NewRegistry(nil)
	p, err := reg.Serve("kube-scheduler", upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })

	get := func(cfg *rest.Config, header string) string {
		t.Helper()
		rt, err := rest.TransportFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, p.URL+"/api/v1/pods?limit=1", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := (&http.Client{Transport: rt}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	component := p.Kubeconfig()
	if diff := cmp.Diff("200 GET /api/v1/pods?limit=1 system:kube-scheduler ", get(component, "")); diff != "" {
		t.Errorf("with the component's certificate (-want +got):\n%s", diff)
	}
	tokenOnly := rest.AnonymousClientConfig(component)
	if diff := cmp.Diff("200 GET /api/v1/pods?limit=1 anonymous Bearer sa-token", get(tokenOnly, "Bearer sa-token")); diff != "" {
		t.Errorf("with a bearer token and no certificate (-want +got):\n%s", diff)
	}
	// A partition that refuses: the request ends with no answer.
	if err := reg.Register(View{Name: "cut", Component: "kube-scheduler", Partition: PartitionRefuse}); err != nil {
		t.Fatal(err)
	}
	rt, _ := rest.TransportFor(component)
	if resp, err := (&http.Client{Transport: rt}).Get(p.URL + "/api/v1/pods"); err == nil {
		_ = resp.Body.Close()
		t.Errorf("a request while cut off was answered %s, want no answer", resp.Status)
	}
	reg.Release("cut", "healed")
	if diff := cmp.Diff("200 GET /api/v1/pods?limit=1 system:kube-scheduler ", get(component, "")); diff != "" {
		t.Errorf("after the partition healed (-want +got):\n%s", diff)
	}
	otherCert, otherKey := ca.client(t, "system:admin")
	other := rest.CopyConfig(component)
	other.CertData, other.KeyData = otherCert, otherKey
	if got := get(other, ""); got[:3] != "401" {
		t.Errorf("with another user's certificate: %s, want 401", got)
	}
}

// TestProxyRefusedBeforeTheBody sends writes through a component's proxy
// to an API server that refuses them before it reads their bodies, as its
// authorization does: each is answered whole, its refusal's body included.
// Without the proxy reading the body first, one in a few hundred waited
// for its body until the client gave up (Go's HTTP/2 on both sides).
func TestProxyRefusedBeforeTheBody(t *testing.T) {
	ca := newIssuer(t)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	const refusal = `{"kind":"Status","reason":"Forbidden"}`
	apiServer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, refusal)
	}))
	apiServer.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	apiServer.EnableHTTP2 = true
	apiServer.StartTLS()
	t.Cleanup(apiServer.Close)
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: apiServer.Certificate().Raw})
	certPEM, keyPEM := ca.client(t, "system:serviceaccount:kube-system:kwok-controller")
	upstream := &rest.Config{Host: apiServer.URL, TLSClientConfig: rest.TLSClientConfig{CAData: serverCA, CertData: certPEM, KeyData: keyPEM}}
	p, err := NewRegistry(nil).Serve("kwok", upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	rt, err := rest.TransportFor(p.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt}
	for i := range 300 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/api/v1/namespaces/default/pods", strings.NewReader(`{"kind":"Pod","metadata":{"name":"not-kwoks"}}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("write %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		cancel()
		if err != nil {
			t.Fatalf("write %d: %s, and its body never came whole: %v", i, resp.Status, err)
		}
		if resp.StatusCode != http.StatusForbidden || string(body) != refusal {
			t.Fatalf("write %d: %s %s, want 403 %s", i, resp.Status, body, refusal)
		}
	}
}
