package sim

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/trainersim/trainersim/"

// floors are the repository's packages from the ground up (docs/layout.md
// draws them). A package imports only packages of lower floors: an import
// to its own floor or above is an arrow that runs back up.
var floors = [][]string{
	// 1: leaves: data, names, processes
	{"fakegpu", "fixtures", "internal/golden", "hack/scalegen/fleet", "hack/benchlog", "sim/fieldpath", "sim/shake", "sim/probe", "sim/manifests", "sim/kubeletcases",
		"sim/internal/checkout", "sim/internal/proc", "sim/internal/proclog", "sim/internal/smpmeta",
		"sim/internal/trainerruntime", "sim/internal/storage", "docs", "scenarios", "sim/sime2e/example"},
	// 2: the pinned releases, the result model, the gate server
	{"sim/releases", "results", "sim/identity", "sim/gate", "sim/view", "sim/internal/controllers", "sim/wrappers"},
	// 3: the scenario format, the reports, the scenario webhooks, the assets
	{"sim/apis/v1alpha1", "reports", "sim/webhooks", "sim/internal/assets"},
	// 4: the seam, and the loader of scenario files
	{"sim/cluster", "sim/scenario", "sim/assetbuild"},
	// 5: what providers share; explain, migrate and import over the format
	{"sim/internal/startup", "sim/internal/kueue", "sim/internal/audit", "sim/policy", "sim/explain", "sim/migrate", "sim/auditimport", "sim/minimize", "sim/explore"},
	// 6: KWOK and its nodes; the runner, over the seam
	{"sim/kwok", "sim/runner", "sim/internal/controlplane"},
	// 7, 8: the providers (kind runs scenarios through a kubeconfig one);
	// what the test-framework adapters share, over the runner and the seam
	{"sim/providers/envtest", "sim/providers/kubeconfig", "sim/internal/suite"},
	{"sim/providers/kind"},
	// 9: the facade that picks a provider
	{"sim"},
	// 10, 11: the programs
	{"sim/simginkgo", "sim/sime2e", "cmd/simctl/app", "hack/assets", "hack/checkoutversion", "hack/corpustable", "hack/manifests", "hack/roundtrip", "hack/scalegen", "hack/schemagen", "hack/soak", "hack/upstream"},
	{"cmd/simctl"},
}

// mayImportProviders are the packages besides the providers themselves that
// may know which provider they talk to.
var mayImportProviders = []string{"sim", "cmd/simctl/app"}

// TestLayers reads the import graph (go list, tests left out) and fails on
// every import that runs back up the floors, on a package no floor holds,
// and on a provider imported by anything but the facade, the CLI and
// another provider.
func TestLayers(t *testing.T) {
	floorOf := map[string]int{}
	for i, pkgs := range floors {
		for _, p := range pkgs {
			floorOf[p] = i + 1
		}
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goTool, "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	arrows := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		from := strings.TrimPrefix(p.ImportPath+"/", module)
		from = strings.TrimSuffix(from, "/")
		if p.ImportPath == strings.TrimSuffix(module, "/") {
			from = "."
		}
		if strings.HasPrefix(from, "sim/e2e") || strings.HasPrefix(from, "sim/kinde2e") {
			continue // test-only packages
		}
		f, ok := floorOf[from]
		if !ok {
			t.Errorf("package %s is on no floor: add it to floors (sim/layout_test.go) and docs/layout.md", from)
			continue
		}
		for _, imp := range p.Imports {
			to, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			arrows++
			if g, ok := floorOf[to]; ok && g >= f {
				t.Errorf("%s (floor %d) imports %s (floor %d): an arrow that runs back up", from, f, to, g)
			}
			if strings.HasPrefix(to, "sim/providers/") && !strings.HasPrefix(from, "sim/providers/") && !slices.Contains(mayImportProviders, from) {
				t.Errorf("%s imports the provider %s: only %s and the providers may know which provider runs; use sim/cluster", from, to, strings.Join(mayImportProviders, ", "))
			}
		}
	}
	if arrows == 0 {
		t.Fatal("go list named no import of this module: the test read nothing")
	}
}
