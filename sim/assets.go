package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainersim/trainersim/sim/internal/checkout"
	"github.com/trainersim/trainersim/sim/internal/proc"
)

// Binary names the harness needs.
const (
	binAPIServer         = "kube-apiserver"
	binEtcd              = "etcd"
	binControllerManager = "kube-controller-manager"
	binScheduler         = "kube-scheduler"
	binKwok              = "kwok"
)

var requiredBinaries = []string{binAPIServer, binEtcd, binControllerManager, binScheduler, binKwok}

// ErrAssetsMissing is returned by Start when a control-plane binary cannot be
// found in any of the places the harness looks.
var ErrAssetsMissing = errors.New("control-plane binaries not found: run 'make assets' in the trainersim checkout (or set KUBEBUILDER_ASSETS, or pass the directory with --assets)")

// assetSearchPath is the ordered list of directories to look in: the
// configured directory, $KUBEBUILDER_ASSETS, then bin/k8s/<version>/ in the
// working directory and each of its parents (so tests in sub-packages find
// the binaries of the checkout they run in), then in the executable's
// directory and its parents (bin/simctl run from anywhere).
func assetSearchPath(configured string) []string {
	var dirs []string
	if configured != "" {
		dirs = append(dirs, configured)
	}
	if env := os.Getenv("KUBEBUILDER_ASSETS"); env != "" {
		dirs = append(dirs, env)
	}
	for _, dir := range upward() {
		dirs = append(dirs, filepath.Join(dir, "bin", "k8s", KubernetesVersion))
	}
	return dirs
}

// upward returns the directories where a checkout's bin/ may be: the
// working directory and its parents, then the executable's (checkout.Upward).
func upward() []string { return checkout.Upward() }

// findBinaries resolves the named binaries (none: every required binary) to the first directory of the
// search path that holds it. Users with setup-envtest assets in
// KUBEBUILDER_ASSETS get kube-apiserver and etcd from there and the rest from
// bin/k8s/<version>/.
func findBinaries(configured string, names ...string) (map[string]string, error) {
	if len(names) == 0 {
		names = requiredBinaries
	}
	dirs := assetSearchPath(configured)
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
		return nil, fmt.Errorf("%w; missing %s; looked in %s", ErrAssetsMissing, strings.Join(missing, ", "), strings.Join(shown, ", "))
	}
	return found, nil
}
