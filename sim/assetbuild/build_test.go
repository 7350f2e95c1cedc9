package assetbuild

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/internal/golden"
	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/releases"
)

// hackDir is the repository's hack/, from this package's directory.
const hackDir = "../../hack"

// TestModulesCurrent: simctl carries each nested module of hack/ that a
// build runs in, file for file (make update copies them), and each of
// hack/'s is some build's.
func TestModulesCurrent(t *testing.T) {
	var dirs []string
	for _, b := range Plan() {
		if !slices.Contains(dirs, b.Module) {
			dirs = append(dirs, b.Module)
		}
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(filepath.Join(hackDir, dir))
		if err != nil {
			t.Fatalf("build module hack/%s: %v", dir, err)
		}
		var names []string
		for _, e := range entries {
			if n := e.Name(); n == "go.mod" || n == "go.sum" || strings.HasSuffix(n, ".go") {
				names = append(names, n)
				data, err := os.ReadFile(filepath.Join(hackDir, dir, n))
				if err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join("modules", dir, n+".txt"), data)
			}
		}
		if golden.Updating() {
			continue
		}
		files, err := embeddedModule(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, names) {
			t.Errorf("simctl's copy of hack/%s has %v, hack/ %v: make update", dir, got, names)
		}
	}
	for _, pattern := range []string{"controlplane", "kwok", "kubemark", "trainer/v*", "jobset/v*", "kueue/v*"} {
		found, _ := filepath.Glob(filepath.Join(hackDir, pattern))
		for _, f := range found {
			dir := filepath.ToSlash(strings.TrimPrefix(f, hackDir+string(filepath.Separator)))
			if _, err := os.Stat(filepath.Join(f, "go.mod")); err == nil && !slices.Contains(dirs, dir) {
				t.Errorf("hack/%s is a module no build runs in", dir)
			}
		}
	}
}

// TestPlan: the corpus's builds come first; every other Trainer release
// has its manager and the JobSet it pins; the in-process release none.
func TestPlan(t *testing.T) {
	plan := Plan()
	corpus := true
	var outputs []string
	for _, b := range plan {
		if b.Corpus && !corpus {
			t.Errorf("%s, which the corpus needs, comes after one it does not", b.Name)
		}
		corpus = b.Corpus
		outputs = append(outputs, b.Outputs...)
	}
	for _, r := range releases.Trainers {
		has := slices.Contains(outputs, assets.TrainerBinary(r.Version))
		if has == r.InProcess() {
			t.Errorf("Trainer %s: a build of its manager %t, in simctl's process %t", r.Version, has, r.InProcess())
		}
		if !r.InProcess() && !slices.Contains(outputs, assets.JobSetBinary(r.JobSet)) {
			t.Errorf("Trainer %s: no build of the JobSet %s it pins", r.Version, r.JobSet)
		}
	}
	for _, want := range []string{path.Join(assets.K8sDir, assets.APIServer), path.Join(assets.K8sDir, assets.Etcd), path.Join(assets.K8sDir, assets.Kwok), assets.KueueBinary(releases.KueueVersion), path.Join(assets.K8sDir, assets.HollowNode)} {
		if !slices.Contains(outputs, want) {
			t.Errorf("no build writes %s", want)
		}
	}
}

// TestCorpusTrainers: every Trainer release a component step of the
// corpus (scenarios/) upgrades to that runs as processes is one of
// CorpusTrainers, which make run builds; and each of them is one.
func TestCorpusTrainers(t *testing.T) {
	named := map[string]bool{}
	err := filepath.WalkDir("../../scenarios", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var sc v1alpha1.Scenario
		if err := yaml.Unmarshal(data, &sc); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, st := range sc.Spec.Steps {
			if c := st.Component; c != nil && c.To != "" {
				r, err := releases.LookupTrainer(c.To)
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				if !r.InProcess() {
					named[r.Version] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(named)); !slices.Equal(got, CorpusTrainers) {
		t.Errorf("the corpus's component steps upgrade to %v, CorpusTrainers is %v", got, CorpusTrainers)
	}
}

// TestBuildKeyAndCurrent: a build is current once it has run into a bin
// directory, not before, and not after its binary is gone; a build that
// fails says which and leaves no stamp. The build is etcd's, real (with
// make assets' build cache warm, seconds).
func TestBuildKeyAndCurrent(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	b := Plan()[1] // etcd
	if b.Name != "etcd" {
		t.Fatalf("Plan()[1] is %s, want etcd", b.Name)
	}
	bin := t.TempDir()
	if b.Current(bin) {
		t.Fatal("current in an empty bin directory")
	}
	k1, err := b.Key()
	if err != nil {
		t.Fatal(err)
	}
	other := b
	other.Ldflags += " -X main.x=y"
	if k2, _ := other.Key(); k2 == k1 {
		t.Error("another -ldflags, the same key")
	}

	// A build that cannot succeed: no stamp, the error names it.
	broken := b
	broken.Packages = []string{"example.com/not/a/module/of/hack"}
	if err := broken.Run(context.Background(), goTool, bin, io.Discard); err == nil || !strings.Contains(err.Error(), "failed to build etcd") {
		t.Errorf("a failed build's error %v does not name it", err)
	}
	if broken.Current(bin) {
		t.Error("a failed build is current")
	}
	if err := b.Run(context.Background(), "no-such-go-command", bin, io.Discard); err == nil || !strings.Contains(err.Error(), "not on PATH") {
		t.Errorf("without go: %v", err)
	}

	// A real build, into a bin directory given relative to the working
	// directory (go build runs elsewhere, in the module's copy).
	t.Chdir(t.TempDir())
	if err := b.Run(context.Background(), goTool, "rel-bin", io.Discard); err != nil {
		t.Fatal(err)
	}
	if !b.Current("rel-bin") {
		t.Errorf("not current after its build")
	}
	if _, err := os.Stat(filepath.Join("rel-bin", filepath.FromSlash(b.Outputs[0]))); err != nil {
		t.Errorf("the binary is not in the bin directory given: %v", err)
	}

	// What the stamp says and the binaries there decide, not the build.
	out := filepath.Join(bin, filepath.FromSlash(b.Outputs[0]))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if b.Current(bin) {
		t.Error("current without its stamp (a binary make built before stamps)")
	}
	if err := os.MkdirAll(filepath.Join(bin, stampDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, stampDir, b.Name), []byte(k1+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !b.Current(bin) {
		t.Error("not current with its binary and its key's stamp")
	}
	if other.Current(bin) {
		t.Error("current with another key's stamp")
	}
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	if b.Current(bin) {
		t.Error("current without its binary")
	}
}

// TestBuildAllFetchesAhead: while a build runs, the modules of the next
// one are downloaded (go list -deps of its packages, in a copy of its
// module). The fake go command's build of etcd ends only once KWOK's fetch
// has run, so BuildAll fails unless the two run side by side; the first
// build's modules are not fetched apart (its build downloads them).
func TestBuildAllFetchesAhead(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	fake := filepath.Join(dir, "go")
	script := `#!/bin/sh
for last; do :; done
echo "$1 $last" >> ` + calls + `
if [ "$1" = build ] && [ "$last" = go.etcd.io/etcd/server/v3 ]; then
	for i in $(seq 100); do
		grep -q "^list sigs.k8s.io/kwok/cmd/kwok$" ` + calls + ` && exit 0
		sleep 0.1
	done
	echo "kwok's modules were not fetched while etcd built" >&2
	exit 1
fi
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := BuildAll(context.Background(), Options{Dir: t.TempDir(), Only: []string{"etcd", "kwok"}, Go: fake}, &out, &out); err != nil {
		t.Fatalf("BuildAll: %v\n%s", err, out.String())
	}
	data, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := []string{"build go.etcd.io/etcd/server/v3", "list sigs.k8s.io/kwok/cmd/kwok", "build sigs.k8s.io/kwok/cmd/kwok"}
	slices.Sort(got)
	if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("go commands run: %q, want %q (no fetch of the first build's modules, which its build downloads)", got, want)
	}
}
