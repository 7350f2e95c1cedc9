// Package assets finds the binaries a cluster runs where `make assets`
// builds them: the control plane and KWOK under bin/k8s/<version>/, the
// other Trainer releases' and Kueue's managers under bin/, in the working
// directory's checkout or the executable's.
package assets

import (
	"errors"
	"fmt"
	"os"
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

// ErrMissing is returned by Start when a control-plane binary cannot be
// found in any of the places the harness looks.
var ErrMissing = errors.New("control-plane binaries not found: run 'make assets' in the trainersim checkout (or set KUBEBUILDER_ASSETS, or pass the directory with --assets)")

// searchPath is the ordered list of directories to look in: the
// configured directory, $KUBEBUILDER_ASSETS, then bin/k8s/<version>/ in the
// working directory and each of its parents (so tests in sub-packages find
// the binaries of the checkout they run in), then in the executable's
// directory and its parents (bin/simctl run from anywhere).
func searchPath(configured string) []string {
	var dirs []string
	if configured != "" {
		dirs = append(dirs, configured)
	}
	if env := os.Getenv("KUBEBUILDER_ASSETS"); env != "" {
		dirs = append(dirs, env)
	}
	for _, dir := range checkout.Upward() {
		dirs = append(dirs, filepath.Join(dir, "bin", "k8s", releases.KubernetesVersion))
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
var ErrReleaseMissing = fmt.Errorf("release binaries not found: run 'make assets' in the trainersim checkout")

// FindReleaseBinaries finds each binary of want (by name, its path relative
// to a checkout) in the working directory or one of its parents; what
// names the binaries' owner in the error.
func FindReleaseBinaries(want map[string]string, what string) (map[string]string, error) {
	found := map[string]string{}
	for _, dir := range checkout.Upward() {
		for name, rel := range want {
			if p := filepath.Join(dir, rel); found[name] == "" && proc.CheckExecutable(p) == nil {
				found[name] = p
			}
		}
	}
	var missing []string
	for name, rel := range want {
		if found[name] == "" {
			missing = append(missing, rel)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("%w; %s needs %s (in the working directory or a parent)", ErrReleaseMissing, what, strings.Join(missing, " and "))
	}
	return found, nil
}
