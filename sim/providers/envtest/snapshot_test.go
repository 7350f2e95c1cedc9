package envtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/releases"
)

// fakeBinaries writes stand-ins for the two binaries a snapshot key reads
// (only their path, size and modification time count).
func fakeBinaries(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	bins := map[string]string{}
	for _, name := range []string{assets.APIServer, assets.Etcd} {
		bins[name] = filepath.Join(dir, name)
		if err := os.WriteFile(bins[name], []byte(name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bins
}

func snapshotKeyOf(t *testing.T, bins map[string]string) string {
	t.Helper()
	in, err := newSnapshotInputs(bins, releases.Trainers[len(releases.Trainers)-1], nil)
	if err != nil {
		t.Fatal(err)
	}
	return in.key()
}

func TestSnapshotKeyFollowsItsInputs(t *testing.T) {
	bins := fakeBinaries(t)
	key := snapshotKeyOf(t, bins)
	if again := snapshotKeyOf(t, bins); again != key {
		t.Fatalf("the same inputs gave two keys: %s, %s", key, again)
	}

	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(bins[assets.Etcd], later, later); err != nil {
		t.Fatal(err)
	}
	rebuilt := snapshotKeyOf(t, bins)
	if rebuilt == key {
		t.Errorf("a rebuilt etcd (new modification time) kept the key %s", key)
	}

	if err := os.WriteFile(bins[assets.APIServer], []byte("a longer kube-apiserver"), 0o755); err != nil {
		t.Fatal(err)
	}
	if changed := snapshotKeyOf(t, bins); changed == rebuilt {
		t.Errorf("a changed kube-apiserver kept the key %s", rebuilt)
	}

	in, err := newSnapshotInputs(bins, releases.Trainers[len(releases.Trainers)-1], nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*snapshotInputs){
		"format":     func(in *snapshotInputs) { in.Format++ },
		"fixtures":   func(in *snapshotInputs) { in.Fixtures += "0" },
		"kubernetes": func(in *snapshotInputs) { in.Kubernetes = "1.0.0" },
		"trainer":    func(in *snapshotInputs) { in.Trainer = "v0.0.0" },
		"flags":      func(in *snapshotInputs) { in.APIServer = nil },
		"isolation":  func(in *snapshotInputs) { in.Isolation = "" },
		"storage":    func(in *snapshotInputs) { in.Storage = "" },
		"kueue":      func(in *snapshotInputs) { in.Kueue = "v0.0.0 0" },
	} {
		other := in
		change(&other)
		if other.key() == in.key() {
			t.Errorf("a change of %s kept the key", name)
		}
	}
}

func TestSnapshotSaveRestorePrune(t *testing.T) {
	root := t.TempDir()
	etcd := filepath.Join(t.TempDir(), "etcd")
	if err := os.MkdirAll(filepath.Join(etcd, "member", "snap"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etcd, "member", "snap", "db"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}

	var stores []snapshotStore
	for i := range snapshotsKept + 2 {
		s := snapshotStore{root: root, key: string(rune('a' + i)), inputs: snapshotInputs{Format: i}}
		if s.exists() {
			t.Fatalf("snapshot %s exists before it was saved", s.key)
		}
		if err := s.save(etcd); err != nil {
			t.Fatal(err)
		}
		if !s.exists() {
			t.Fatalf("snapshot %s does not exist after save", s.key)
		}
		// Distinct last-use times, oldest first.
		used := time.Now().Add(time.Duration(i-10) * time.Minute)
		if err := os.Chtimes(filepath.Join(s.dir(), snapshotKeyFile), used, used); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}

	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != snapshotsKept {
		t.Errorf("%d snapshot directories after %d saves, want %d kept", len(entries), len(stores), snapshotsKept)
	}
	if stores[0].exists() || stores[1].exists() {
		t.Errorf("the least recently used snapshots were kept")
	}

	last := stores[len(stores)-1]
	dst := filepath.Join(t.TempDir(), "etcd")
	if err := last.restore(dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dst, "member", "snap", "db"))
	if err != nil || string(got) != "data" {
		t.Errorf("restored db = %q, %v; want %q", got, err, "data")
	}
	if err := last.restore(dst); err == nil {
		t.Errorf("a restore over existing etcd data succeeded")
	}
}
