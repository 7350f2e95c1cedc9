package envtest

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestStartRefusesUsedWorkDir: a --work-dir that holds the etcd data of an
// earlier cluster is refused with a line that names it, before anything
// starts, and the data is left alone.
func TestStartRefusesUsedWorkDir(t *testing.T) {
	dir := t.TempDir()
	member := filepath.Join(dir, "etcd", "member")
	if err := os.MkdirAll(member, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &Environment{WorkDir: dir}
	err := e.Start(t.Context())
	want := "work directory " + dir + " holds the etcd data of an earlier cluster (" + filepath.Join(dir, "etcd") + "): give a new or empty directory, or remove that one"
	if err == nil || err.Error() != want {
		t.Errorf("Start: %v, want %q", err, want)
	}
	if _, err := os.Stat(member); err != nil {
		t.Errorf("the earlier data is gone: %v", err)
	}
}

// TestMoveServingCerts: the webhooks' serving certificates envtest wrote
// to a directory of its own end up in the work dir, whole, and envtest's
// directory is gone: on the same file system (a rename) and from another
// one (/dev/shm, a tmpfs, to the work dir: a copy), as --work-dir may
// choose, each file with its mode.
func TestMoveServingCerts(t *testing.T) {
	for name, from := range map[string]string{"same file system": t.TempDir(), "another file system": "/dev/shm"} {
		t.Run(name, func(t *testing.T) {
			certs, err := os.MkdirTemp(from, "envtest-serving-certs-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(certs) })
			files := map[string]string{"tls.crt": "cert", "tls.key": "key"}
			for f, data := range files {
				if err := os.WriteFile(filepath.Join(certs, f), []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			e := &Environment{WorkDir: t.TempDir(), env: &envtest.Environment{}}
			e.env.WebhookInstallOptions.LocalServingCertDir = certs
			if err := e.moveServingCerts(); err != nil {
				t.Fatal(err)
			}
			moved := e.env.WebhookInstallOptions.LocalServingCertDir
			if filepath.Dir(moved) != e.WorkDir {
				t.Errorf("the certificates are in %s, want a directory of the work dir %s", moved, e.WorkDir)
			}
			for f, want := range files {
				if got, err := os.ReadFile(filepath.Join(moved, f)); err != nil || string(got) != want {
					t.Errorf("%s: %q, %v; want %q", f, got, err, want)
				}
				// The key readable by its owner alone, as envtest wrote it.
				st, err := os.Stat(filepath.Join(moved, f))
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != 0o600 {
					t.Errorf("%s: mode %v, want -rw-------", f, st.Mode().Perm())
				}
			}
			if _, err := os.Stat(certs); !os.IsNotExist(err) {
				t.Errorf("envtest's directory %s is still there: %v", certs, err)
			}
		})
	}
}
