// Package assetbuild builds the binaries a cluster runs from source, as
// `make assets` and `simctl assets` do: each build a go build in a copy of
// a nested module of the repository's hack/, which the package carries,
// into a bin directory (a checkout's bin/, or assets.CacheDir) where
// sim/internal/assets finds them.
package assetbuild

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
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
	"time"

	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/releases"
)

// modules are the nested modules of hack/ that the builds run in, each
// file with .txt after its name (a go.mod would make its directory another
// module, which go:embed refuses). TestModulesCurrent keeps them equal to
// hack/'s; make update copies them.
//
//go:embed modules
var modules embed.FS

// Build is one go build of the binaries a cluster runs, in a nested module
// of hack/ (its go.mod pins what it builds), as `make assets` and
// `simctl assets` run it.
type Build struct {
	// Name names the build in progress lines and in Only.
	Name string
	// What it builds, for progress lines.
	What string
	// Module is its nested module's directory under hack/.
	Module string
	// Packages are what go build builds, Ldflags its -ldflags.
	Packages []string
	Ldflags  string
	// Outputs are the binaries it writes, relative to the bin directory.
	Outputs []string
	// Corpus is whether the corpus needs it (the control plane, KWOK,
	// Kueue, and the releases of CorpusTrainers with their JobSets); the
	// other Trainer releases and the hollow kubelet are not.
	Corpus bool
	// Cold is about how long it takes with empty Go caches, in Plan's
	// order, on the slower of the 2-core machines the project has run on.
	Cold time.Duration
	// Sources, when set, holds the modules as hack/ does (a checkout's
	// hack/: make assets builds what the checkout says); nil: the copies
	// simctl carries.
	Sources fs.FS
}

// k8sLdflags are the control plane's -ldflags: the version its binaries
// report, as Kubernetes' own build stamps it.
func k8sLdflags() string {
	v := releases.KubernetesVersion
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	return strings.Join([]string{"-s -w",
		"-X k8s.io/component-base/version.gitVersion=v" + v,
		"-X k8s.io/component-base/version.gitMajor=" + major,
		"-X k8s.io/component-base/version.gitMinor=" + minor,
		"-X k8s.io/client-go/pkg/version.gitVersion=v" + v}, " ")
}

// CorpusTrainers are the Trainer releases that the corpus's component
// steps upgrade from or to (scenarios/upgrades/): a scenario naming a
// release whose binaries are not built does not lint, so make run builds
// them too.
var CorpusTrainers = []string{"v2.1.0", "v2.2.1"}

// Plan is every build, what the corpus needs first: the control plane
// (kube-apiserver, kube-controller-manager and kube-scheduler in one go
// build), etcd, KWOK and Kueue, then the releases of CorpusTrainers with
// the JobSet releases they pin; then each other Trainer release that runs
// as processes with its JobSet release, and the hollow kubelet.
func Plan() []Build {
	k8s := releases.KubernetesVersion
	plan := []Build{
		{
			Name: "control-plane", What: "kube-apiserver, kube-controller-manager and kube-scheduler v" + k8s,
			Module:   "controlplane",
			Packages: []string{"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kube-scheduler"},
			Ldflags:  k8sLdflags(),
			Outputs:  []string{path.Join(assets.K8sDir, assets.APIServer), path.Join(assets.K8sDir, assets.ControllerManager), path.Join(assets.K8sDir, assets.Scheduler)},
			Corpus:   true, Cold: 10 * time.Minute,
		},
		{
			Name: "etcd", What: "etcd", Module: "controlplane",
			Packages: []string{"go.etcd.io/etcd/server/v3"}, Ldflags: "-s -w",
			Outputs: []string{path.Join(assets.K8sDir, assets.Etcd)}, Corpus: true, Cold: 20 * time.Second,
		},
		{
			Name: "kwok", What: "kwok " + releases.KwokVersion, Module: "kwok",
			Packages: []string{"sigs.k8s.io/kwok/cmd/kwok"}, Ldflags: "-s -w",
			Outputs: []string{path.Join(assets.K8sDir, assets.Kwok)}, Corpus: true, Cold: 2 * time.Minute,
		},
		{
			Name: "kueue-" + releases.KueueVersion, What: "Kueue " + releases.KueueVersion, Module: path.Join("kueue", releases.KueueVersion),
			Packages: []string{"sigs.k8s.io/kueue/cmd/kueue"}, Ldflags: "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=" + releases.KueueVersion,
			Outputs: []string{assets.KueueBinary(releases.KueueVersion)}, Corpus: true, Cold: 6 * time.Minute,
		},
	}
	// The corpus's releases first, then the others.
	for _, corpus := range []bool{true, false} {
		var jobSets []string
		for _, r := range releases.Trainers {
			if r.InProcess() || slices.Contains(CorpusTrainers, r.Version) != corpus {
				continue
			}
			plan = append(plan, Build{
				Name: "trainer-" + r.Version, What: "the Trainer " + r.Version + " controller manager", Module: path.Join("trainer", r.Version),
				Packages: []string{"github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"}, Ldflags: "-s -w",
				Outputs: []string{assets.TrainerBinary(r.Version)}, Corpus: corpus, Cold: 150 * time.Second,
			})
			if !slices.Contains(jobSets, r.JobSet) && !slices.ContainsFunc(plan, func(b Build) bool { return b.Name == "jobset-"+r.JobSet }) {
				jobSets = append(jobSets, r.JobSet)
			}
		}
		for _, v := range jobSets {
			plan = append(plan, Build{
				Name: "jobset-" + v, What: "the JobSet " + v + " manager", Module: path.Join("jobset", v),
				Packages: []string{"sigs.k8s.io/jobset"}, Ldflags: "-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion=" + v,
				Outputs: []string{assets.JobSetBinary(v)}, Corpus: corpus, Cold: 160 * time.Second,
			})
		}
	}
	return append(plan, Build{
		Name: "hollow-node", What: "the hollow kubelet (kubemark's) v" + k8s, Module: "kubemark",
		Packages: []string{"."}, Ldflags: k8sLdflags(),
		Outputs: []string{path.Join(assets.K8sDir, assets.HollowNode)}, Cold: time.Minute, // after the control plane's, whose packages it shares
	})
}

// stampDir is where, in the bin directory, each build's key is kept once
// it has built: the next build of the same key does nothing.
const stampDir = ".builds"

// Key is what decides the build's binaries: its module's files, packages
// and flags. A build whose key changed (go.mod moved a version) builds
// again.
func (b Build) Key() (string, error) {
	h := sha256.New()
	files, err := b.moduleFiles()
	if err != nil {
		return "", err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	fmt.Fprintf(h, "%q %q %q", b.Packages, b.Ldflags, b.Outputs)
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// Current reports whether bin holds b's binaries as its key builds them.
func (b Build) Current(bin string) bool {
	key, err := b.Key()
	if err != nil {
		return false
	}
	stamp, err := os.ReadFile(filepath.Join(bin, stampDir, b.Name))
	if err != nil || strings.TrimSpace(string(stamp)) != key {
		return false
	}
	for _, o := range b.Outputs {
		if proc.CheckExecutable(filepath.Join(bin, filepath.FromSlash(o))) != nil {
			return false
		}
	}
	return true
}

// Run builds b into bin with the go command goTool, in a copy of its
// module made in a temporary directory; go's output goes to out. The
// binaries are static (CGO_ENABLED=0, as upstream builds them) and
// -trimpath; GOWORK is off, so a workspace around bin changes nothing.
func (b Build) Run(ctx context.Context, goTool, bin string, out io.Writer) error {
	key, err := b.Key()
	if err != nil {
		return err
	}
	// go build runs in the module's copy: a relative bin would be its.
	if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	var target string
	if len(b.Outputs) == 1 {
		target = filepath.Join(bin, filepath.FromSlash(b.Outputs[0]))
	} else {
		target = filepath.Join(bin, filepath.FromSlash(path.Dir(b.Outputs[0]))) + string(filepath.Separator)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(bin, filepath.FromSlash(b.Outputs[0]))), 0o755); err != nil {
		return err
	}
	args := append([]string{"build", "-trimpath", "-ldflags", b.Ldflags, "-o", target}, b.Packages...)
	if err := b.goInCopy(ctx, goTool, args, out, out); err != nil {
		var notFound *exec.Error
		if errors.As(err, &notFound) {
			return fmt.Errorf("failed to build %s: the go command %q is not on PATH (simctl assets builds with Go %s or later)", b.What, goTool, goVersion())
		}
		return fmt.Errorf("failed to build %s: go %s in a copy of hack/%s: %w", b.What, strings.Join(args, " "), b.Module, err)
	}
	if err := os.MkdirAll(filepath.Join(bin, stampDir), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(bin, stampDir, b.Name), []byte(key+"\n"), 0o644)
}

// Fetch downloads into the module cache what b's packages are built from,
// and compiles nothing (go list -deps, which resolves every import): run
// while another build compiles, it takes b's downloads off the time
// before b's compile starts. Its error is only said: b's own go build
// downloads what Fetch did not, and fails there if it cannot.
func (b Build) Fetch(ctx context.Context, goTool string) error {
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, b.Packages...)
	var stderr strings.Builder
	if err := b.goInCopy(ctx, goTool, args, io.Discard, &stderr); err != nil {
		return fmt.Errorf("failed to download the modules of %s: %w: %s", b.What, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// goInCopy runs the go command goTool with args in a copy of b's module
// made in a temporary directory, with the environment of its builds: no
// cgo, no workspace, go.mod and go.sum as they are.
func (b Build) goInCopy(ctx context.Context, goTool string, args []string, stdout, stderr io.Writer) error {
	files, err := b.moduleFiles()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "trainersim-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=readonly")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// goVersion is the Go release the modules ask for (their go lines).
func goVersion() string {
	data, err := modules.ReadFile("modules/controlplane/go.mod.txt")
	if err != nil {
		return "1.26"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	return "1.26"
}

// moduleFiles are the files of b's module (go.mod, go.sum, Go files), by
// their names in hack/.
func (b Build) moduleFiles() (map[string][]byte, error) {
	if b.Sources == nil {
		return embeddedModule(b.Module)
	}
	entries, err := fs.ReadDir(b.Sources, b.Module)
	if err != nil {
		return nil, fmt.Errorf("no module hack/%s: %w", b.Module, err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (n == "go.mod" || n == "go.sum" || strings.HasSuffix(n, ".go")) {
			if files[n], err = fs.ReadFile(b.Sources, path.Join(b.Module, n)); err != nil {
				return nil, err
			}
		}
	}
	if files["go.mod"] == nil {
		return nil, fmt.Errorf("no module hack/%s: it has no go.mod", b.Module)
	}
	return files, nil
}

// embeddedModule is simctl's copy of the module at dir under hack/.
func embeddedModule(dir string) (map[string][]byte, error) {
	root := path.Join("modules", dir)
	entries, err := fs.ReadDir(modules, root)
	if err != nil {
		return nil, fmt.Errorf("no module hack/%s in simctl: %w", dir, err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".txt")
		if e.IsDir() || !ok {
			continue
		}
		data, err := modules.ReadFile(path.Join(root, e.Name()))
		if err != nil {
			return nil, err
		}
		files[name] = data
	}
	if files["go.mod"] == nil {
		return nil, fmt.Errorf("no module hack/%s in simctl: it has no go.mod", dir)
	}
	return files, nil
}
