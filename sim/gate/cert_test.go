package gate

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
)

// TestWriteServingCert: an endpoint served with the certificate is trusted
// by a client that trusts the returned CA, for the host's IP address.
func TestWriteServingCert(t *testing.T) {
	dir := t.TempDir()
	ca, err := WriteServingCert(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := Serve("127.0.0.1", dir, ca, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("the CA is not PEM")
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := c.Get(*ep.ClientConfig("/x").URL)
	if err != nil {
		t.Fatalf("a client trusting the CA: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("status %d", resp.StatusCode)
	}
	if _, err := WriteServingCert(t.TempDir(), "localhost"); err == nil {
		t.Error("a host name was taken for an IP address")
	}
}
