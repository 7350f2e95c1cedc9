// Package assets finds the binaries a cluster runs where `make assets`
// and `simctl assets` (sim/assetbuild) build them: the
// control plane and KWOK under bin/k8s/<version>/, the other Trainer
// releases' and Kueue's managers under bin/, in the working directory's
// checkout or the executable's, or in the user's cache (CacheDir).
package assets

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trainersim/trainersim/sim/internal/checkout"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/releases"
)

// Binary names of the control plane and KWOK.
const (
	APIServer         = "kube-apiserver"
	Etcd              = "etcd"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
)

var controlPlane = []string{APIServer, Etcd, ControllerManager, Scheduler, Kwok}

// HollowNode is the hollow kubelet's binary, in K8sDir.
const HollowNode = "hollow-node"

// K8sDir is the directory of the control plane's binaries, KWOK's and the
// hollow kubelet's, relative to a bin directory.
var K8sDir = path.Join("k8s", releases.KubernetesVersion)

// TrainerBinary, JobSetBinary and KueueBinary are where a release's
// manager is, relative to a bin directory.
func TrainerBinary(version string) string {
	return path.Join("trainer", version, "trainer-controller-manager")
}

// JobSetBinary: see TrainerBinary.
func JobSetBinary(version string) string { return path.Join("jobset", version, "jobset") }

// KueueBinary: see TrainerBinary.
func KueueBinary(version string) string { return path.Join("kueue", version, "kueue") }

// ErrMissing is returned by Start when a control-plane binary cannot be
// found in any of the places the harness looks.
var ErrMissing = errors.New("control-plane binaries not found: run 'simctl assets' (or 'make assets' in the trainersim checkout; or set KUBEBUILDER_ASSETS, or pass the directory with --assets)")

// CacheDir is where `simctl assets` builds by default, a bin directory:
// trainersim/bin in the user's cache directory ($XDG_CACHE_HOME, else
// ~/.cache); "" when there is none.
func CacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "trainersim", "bin")
}

// binDirs are the bin directories to look in, nearest first: bin/ in the
// working directory and each of its parents (so tests in sub-packages find
// the binaries of the checkout they run in), then in the executable's
// directory and its parents (bin/simctl run from anywhere), then the
// user's cache (a simctl installed with go install).
func binDirs() []string {
	var dirs []string
	for _, dir := range checkout.Upward() {
		dirs = append(dirs, filepath.Join(dir, "bin"))
	}
	if c := CacheDir(); c != "" {
		dirs = append(dirs, c)
	}
	return dirs
}

// searchPath is the ordered list of directories to look in: the
// configured directory, $KUBEBUILDER_ASSETS, then k8s/<version>/ in each
// of binDirs.
func searchPath(configured string) []string {
	var dirs []string
	if configured != "" {
		dirs = append(dirs, configured)
	}
	if env := os.Getenv("KUBEBUILDER_ASSETS"); env != "" {
		dirs = append(dirs, env)
	}
	for _, dir := range binDirs() {
		dirs = append(dirs, filepath.Join(dir, filepath.FromSlash(K8sDir)))
	}
	return dirs
}

// Find resolves the named binaries (none: every required binary) to the first directory of the
// search path that holds it. Users with setup-envtest assets in
// KUBEBUILDER_ASSETS get kube-apiserver and etcd from there and the rest from
// bin/k8s/<version>/.
func Find(configured string, names ...string) (map[string]string, error) {
	if len(names) == 0 {
		names = controlPlane
	}
	dirs := searchPath(configured)
	found := map[string]string{}
	var missing []string
	for _, name := range names {
		for _, dir := range dirs {
			p, err := filepath.Abs(filepath.Join(dir, name))
			if err == nil && proc.CheckExecutable(p) == nil {
				found[name] = p
				break
			}
		}
		if found[name] == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		shown := dirs
		if len(shown) > 3 {
			shown = append(shown[:3:3], "...")
		}
		return nil, fmt.Errorf("%w; missing %s; looked in %s", ErrMissing, strings.Join(missing, ", "), strings.Join(shown, ", "))
	}
	return found, nil
}

// ErrReleaseMissing is returned by Start when a release's managers, or a
// component's, were not built.
var ErrReleaseMissing = fmt.Errorf("release binaries not found: run 'simctl assets --all' (or 'make assets' in the trainersim checkout)")

// FindReleaseBinaries finds each binary of want (by name, its path relative
// to a bin directory: TrainerBinary, KueueBinary...) in the first of
// binDirs that has it; what names the binaries' owner in the error.
func FindReleaseBinaries(want map[string]string, what string) (map[string]string, error) {
	found := map[string]string{}
	dirs := binDirs()
	for _, dir := range dirs {
		for name, rel := range want {
			if p := filepath.Join(dir, filepath.FromSlash(rel)); found[name] == "" && proc.CheckExecutable(p) == nil {
				found[name] = p
			}
		}
	}
	var missing []string
	for name, rel := range want {
		if found[name] == "" {
			missing = append(missing, path.Join("bin", rel))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		where := "in the working directory or a parent"
		if c := CacheDir(); c != "" {
			where += ", or in " + c
		}
		return nil, fmt.Errorf("%w; %s needs %s (%s)", ErrReleaseMissing, what, strings.Join(missing, " and "), where)
	}
	return found, nil
}
