package envtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/internal/startup"
	"github.com/trainersim/trainersim/sim/internal/storage"
	"github.com/trainersim/trainersim/sim/policy"
	"github.com/trainersim/trainersim/sim/releases"
)

// The envtest provider starts from a snapshot: the etcd data of a cluster
// in which everything that is the same on every start is already done (the
// CRDs created and Established, Kueue's too when the cluster runs it, the webhook configurations, the default
// runtimes admitted by the Trainer's webhook, the cluster-wide isolation
// policy, the default StorageClass). It is built once, by a start of its own, and copied into each
// new cluster's work directory; the API server then starts on it as it
// would on a restarted control plane. A snapshot is keyed by everything
// it is made from, so a change to any of it builds a new one.

// snapshotFormat is part of every key: raise it when what a snapshot holds
// changes in a way the other inputs do not show.
const snapshotFormat = 2

// EnvSnapshotDir overrides where snapshots are kept.
const EnvSnapshotDir = "TRAINERSIM_SNAPSHOT_DIR"

// snapshotsKept is how many snapshots (of about 70 MB each) stay in the
// cache when a new one is built: one per Trainer release with Kueue and one
// without, and two more for other control-plane builds on one machine.
var snapshotsKept = 2*len(releases.Trainers) + 2

// Names inside a snapshot's directory.
const (
	snapshotEtcdDir   = "etcd"
	snapshotKeyFile   = "key.json"
	snapshotStaging   = ".staging-"
	snapshotDirPrefix = "envtest-"
)

// StepSnapshot is the step that restores (or, the first time, builds)
// the snapshot.
const StepSnapshot = "snapshot"

// snapshotInputs is what a snapshot depends on; its hash is the key.
type snapshotInputs struct {
	Format     int               `json:"format"`
	Kubernetes string            `json:"kubernetes"`
	Trainer    string            `json:"trainer"`
	JobSet     string            `json:"jobset"`
	APIServer  []string          `json:"apiserverFlags"`
	Binaries   map[string]string `json:"binaries"`
	Fixtures   string            `json:"fixtures"`
	Isolation  string            `json:"isolationPolicy"`
	Storage    string            `json:"storageClass"`
	// Kueue is the Kueue component's version and the hash of its CRDs,
	// when the cluster runs it: its CRDs are in the snapshot then.
	Kueue string `json:"kueue,omitempty"`
}

// apiServerFlags are the flags the harness adds to envtest's (they shape
// what the API server stores, hence the key). The admission chain is a
// kubeadm (kind) cluster's: every plugin the API server enables by default,
// ServiceAccount included (envtest turns it off, see
// apiServerDroppedDefaults), plus NodeRestriction, which kubeadm adds.
// PodNodeSelector and PodTolerationRestriction are the harness's own: they
// let a namespace's annotations add a nodeSelector and tolerations to its
// Pods, and the scenario runner confines each scenario's Pods to its own
// nodes so.
var apiServerFlags = map[string][]string{
	"enable-admission-plugins": {"NodeRestriction", "PodNodeSelector", "PodTolerationRestriction"},
}

// apiServerDroppedDefaults are envtest's default flags the harness removes:
// envtest disables the ServiceAccount admission plugin, which every real
// cluster runs (it refuses a Pod whose ServiceAccount does not exist and
// mounts the account's token).
var apiServerDroppedDefaults = []string{"disable-admission-plugins"}

// apiServerFlagKey spells the flags for the snapshot key, in a stable order.
func apiServerFlagKey() []string {
	var out []string
	for flag, values := range apiServerFlags {
		out = append(out, flag+"="+strings.Join(values, ","))
	}
	for _, flag := range apiServerDroppedDefaults {
		out = append(out, "-"+flag)
	}
	sort.Strings(out)
	return out
}

// newSnapshotInputs collects the inputs: the binaries by path, size and
// modification time (what `make assets` changes when it rebuilds them), the
// embedded fixtures by content, the versions, the isolation policy, the
// default StorageClass and, with the Kueue component, Kueue's version and
// CRDs.
func newSnapshotInputs(bins map[string]string, release releases.Trainer, components []string) (snapshotInputs, error) {
	in := snapshotInputs{
		Format:     snapshotFormat,
		Kubernetes: releases.KubernetesVersion,
		Trainer:    release.Version,
		JobSet:     release.JobSet,
		Binaries:   map[string]string{},
	}
	in.APIServer = apiServerFlagKey()
	for _, name := range []string{assets.APIServer, assets.Etcd} {
		path, err := filepath.Abs(bins[name])
		if err != nil {
			return in, err
		}
		st, err := os.Stat(path)
		if err != nil {
			return in, fmt.Errorf("failed to read %s: %w", name, err)
		}
		in.Binaries[name] = fmt.Sprintf("%s %d %d", path, st.Size(), st.ModTime().UnixNano())
	}
	var err error
	if in.Fixtures, err = filesHash(release.Fixtures(), ".", fixtures.ReleasesDir, fixtures.ComponentsDir); err != nil { // those two are not in the snapshot
		return in, fmt.Errorf("failed to read the fixtures: %w", err)
	}
	if slices.Contains(components, releases.ComponentKueue) {
		src, err := findKueue()
		if err != nil {
			return in, err
		}
		crds, err := filesHash(src.fixtures, kueueCRDDir)
		if err != nil {
			return in, fmt.Errorf("failed to read Kueue's CRDs: %w", err)
		}
		in.Kueue = src.version + " " + crds
	}
	policy, binding := policy.ClusterIsolation.Objects()
	if in.Isolation, err = objectsHash(policy, binding); err != nil {
		return in, err
	}
	if in.Storage, err = objectsHash(storage.DefaultStorageClass()); err != nil {
		return in, err
	}
	return in, nil
}

// filesHash is the hex SHA-256 of the files under root in files, by path
// and content, less the directories skipped.
func filesHash(files fs.FS, root string, skipped ...string) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(files, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if slices.Contains(skipped, path) {
				return fs.SkipDir
			}
			return nil
		}
		data, err := fs.ReadFile(files, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// objectsHash is the hex SHA-256 of the objects' JSON.
func objectsHash(objs ...any) (string, error) {
	data, err := json.Marshal(objs)
	if err != nil {
		return "", fmt.Errorf("failed to hash the snapshot's objects: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

func (in snapshotInputs) key() string {
	data, _ := json.Marshal(in)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// snapshotRoot is where snapshots are kept: $TRAINERSIM_SNAPSHOT_DIR, else
// trainersim/snapshots in the user's cache directory, else (no home)
// trainersim.snapshots in the temporary directory.
func snapshotRoot() string {
	if dir := os.Getenv(EnvSnapshotDir); dir != "" {
		return dir
	}
	if cache, err := os.UserCacheDir(); err == nil {
		return filepath.Join(cache, "trainersim", "snapshots")
	}
	return filepath.Join(os.TempDir(), "trainersim.snapshots")
}

// snapshotStore is the snapshot directory of one key.
type snapshotStore struct {
	root   string
	key    string
	inputs snapshotInputs
}

func (s snapshotStore) dir() string { return filepath.Join(s.root, snapshotDirPrefix+s.key) }

// exists reports whether the snapshot was built completely: its key file is
// written last, in the staging directory renamed into place.
func (s snapshotStore) exists() bool {
	_, err := os.Stat(filepath.Join(s.dir(), snapshotKeyFile))
	return err == nil
}

// restore copies the snapshot's etcd data into dst, which must not exist.
func (s snapshotStore) restore(dst string) error {
	now := time.Now()
	_ = os.Chtimes(filepath.Join(s.dir(), snapshotKeyFile), now, now)
	if err := copyTree(filepath.Join(s.dir(), snapshotEtcdDir), dst); err != nil {
		return fmt.Errorf("failed to restore the snapshot %s: %w", s.dir(), err)
	}
	return nil
}

// save copies etcd data (of a stopped etcd) into the store: into a staging
// directory first, renamed into place, so that a reader never sees half a
// snapshot. A snapshot another process saved first wins.
func (s snapshotStore) save(etcdDir string) error {
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", s.root, err)
	}
	staging, err := os.MkdirTemp(s.root, snapshotStaging)
	if err != nil {
		return fmt.Errorf("failed to create a staging directory: %w", err)
	}
	defer os.RemoveAll(staging)
	if err := copyTree(etcdDir, filepath.Join(staging, snapshotEtcdDir)); err != nil {
		return fmt.Errorf("failed to copy etcd data into the snapshot: %w", err)
	}
	data, err := json.MarshalIndent(s.inputs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(staging, snapshotKeyFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.Rename(staging, s.dir()); err != nil && !s.exists() {
		return fmt.Errorf("failed to move the snapshot into %s: %w", s.dir(), err)
	}
	s.prune()
	return nil
}

// prune removes the least recently used snapshots of other keys beyond
// snapshotsKept, and staging directories of builds that died.
func (s snapshotStore) prune() {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return
	}
	type kept struct {
		path string
		used time.Time
	}
	var others []kept
	for _, e := range entries {
		path := filepath.Join(s.root, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), snapshotStaging):
			if st, err := os.Stat(path); err == nil && time.Since(st.ModTime()) > time.Hour {
				_ = os.RemoveAll(path)
			}
		case strings.HasPrefix(e.Name(), snapshotDirPrefix) && path != s.dir():
			st, err := os.Stat(filepath.Join(path, snapshotKeyFile))
			if err != nil {
				continue
			}
			others = append(others, kept{path, st.ModTime()})
		}
	}
	if len(others) < snapshotsKept {
		return
	}
	for i := range others {
		for j := i + 1; j < len(others); j++ {
			if others[j].used.After(others[i].used) {
				others[i], others[j] = others[j], others[i]
			}
		}
	}
	for _, o := range others[snapshotsKept-1:] {
		_ = os.RemoveAll(o.path)
	}
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		return copyFile(path, target, info.Mode().Perm())
	})
}

func copyFile(src, dst string, perm fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}

// restoreSnapshot copies the snapshot of these binaries, fixtures and
// versions into the work directory's etcd, building it first if there is
// none.
func (e *Environment) restoreSnapshot(ctx context.Context, bins map[string]string) error {
	since := e.now()
	inputs, err := newSnapshotInputs(bins, e.release, e.Components)
	if err != nil {
		return err
	}
	store := snapshotStore{root: snapshotRoot(), key: inputs.key(), inputs: inputs}
	if !store.exists() {
		if err := e.buildSnapshot(ctx, store); err != nil {
			return fmt.Errorf("failed to build the snapshot: %w", err)
		}
	}
	if err := store.restore(filepath.Join(e.WorkDir, "etcd")); err != nil {
		return err
	}
	e.ready(StepSnapshot, since)
	return nil
}

// buildSnapshot starts a control plane of its own on an empty etcd, with
// the CRDs (Kueue's too, with the Kueue component), webhook configurations,
// Trainer and JobSet controllers, default runtimes, isolation policy and
// default StorageClass, stops it and saves its etcd data.
func (e *Environment) buildSnapshot(ctx context.Context, store snapshotStore) error {
	dir, err := startup.NewWorkDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b := &Environment{AssetsDir: e.AssetsDir, Trainer: e.release.Version, WorkDir: dir, Components: e.Components, snapshotBuild: true, Clock: e.Clock}
	if err := b.Start(ctx); err != nil {
		return err
	}
	if err := b.Stop(); err != nil {
		return err
	}
	return store.save(filepath.Join(dir, "etcd"))
}
