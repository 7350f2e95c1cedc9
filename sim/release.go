package sim

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/trainersim/trainersim/fixtures"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/internal/proc"
)

// The Kubeflow Trainer releases the harness runs. The one go.mod pins
// (TrainerVersion) runs in simctl's process, with the explain agreement hook;
// every other runs as two processes built by `make assets` from a nested
// module hack/trainer/<version>/, the Trainer's trainer-controller-manager and
// JobSet's manager at the version that release's go.mod pins: the binaries a
// cluster runs in their images. Each release brings its own CRDs, webhook
// configurations and default runtimes (fixtures/releases/<version>/).

// TrainerRelease is one Trainer release the harness can run.
type TrainerRelease struct {
	// Version is the Trainer's, e.g. v2.2.1.
	Version string
	// JobSet is the JobSet version the release's go.mod pins.
	JobSet string
}

// TrainerReleases are the supported releases, oldest first. A unit test
// checks each against hack/trainer/<version>/go.mod and fixtures/releases.
var TrainerReleases = []TrainerRelease{
	{Version: "v2.1.0", JobSet: "v0.10.1"},
	{Version: "v2.2.0", JobSet: "v0.11.1"},
	{Version: "v2.2.1", JobSet: "v0.11.1"},
	{Version: TrainerVersion, JobSet: JobSetVersion},
}

// TrainerVersions lists the supported versions, oldest first.
func TrainerVersions() []string {
	out := make([]string, len(TrainerReleases))
	for i, r := range TrainerReleases {
		out[i] = r.Version
	}
	return out
}

// LookupTrainer returns the release of version ("" is the pinned one; the
// leading v may be left out). The error lists the supported versions.
func LookupTrainer(version string) (TrainerRelease, error) {
	if version == "" {
		version = TrainerVersion
	}
	given := version
	if !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	for _, r := range TrainerReleases {
		if r.Version == version {
			return r, nil
		}
	}
	if !semver.IsValid(version) {
		return TrainerRelease{}, fmt.Errorf("invalid Trainer version %q: give one of %s", given, strings.Join(TrainerVersions(), ", "))
	}
	return TrainerRelease{}, fmt.Errorf("unsupported Trainer version %s: trainersim runs %s", version, strings.Join(TrainerVersions(), ", "))
}

// HasTrainJobField reports whether the release's TrainJob has the field
// path, spelled as v1alpha1.TrainJobFields spells it
// ("spec.runtimePatches"): a field that list does not name is in every
// release.
func (r TrainerRelease) HasTrainJobField(path string) bool {
	for _, f := range v1alpha1.TrainJobFields {
		if f.Path == path {
			return v1alpha1.MustParseVersionRange(f.Versions).Contains(r.Version)
		}
	}
	return true
}

// InProcess reports whether the release is the one compiled into simctl.
func (r TrainerRelease) InProcess() bool { return r.Version == TrainerVersion }

// Fixtures holds the release's crds/, webhooks/ and runtimes/, laid out like
// fixtures.FS.
func (r TrainerRelease) Fixtures() fs.FS {
	if r.InProcess() {
		return fixtures.FS
	}
	sub, err := fs.Sub(fixtures.FS, path.Join(fixtures.ReleasesDir, r.Version))
	if err != nil {
		// fs.Sub fails only on an invalid path, which a version is not.
		panic(err)
	}
	return sub
}

// Binary names of a release that runs as processes.
const (
	binTrainerManager = "trainer-controller-manager"
	binJobSetManager  = "jobset"
)

// ErrTrainerMissing is returned by Start when a release's managers, or a
// component's, were not built.
var ErrTrainerMissing = fmt.Errorf("release binaries not found: run 'make assets' in the trainersim checkout")

// binaries finds the release's two managers where `make assets` builds
// them, bin/trainer/<version>/ and bin/jobset/<jobset version>/.
func (r TrainerRelease) binaries() (map[string]string, error) {
	return findReleaseBinaries(map[string]string{
		binTrainerManager: filepath.Join("bin", "trainer", r.Version, binTrainerManager),
		binJobSetManager:  filepath.Join("bin", "jobset", r.JobSet, binJobSetManager),
	}, "Trainer "+r.Version)
}

// findReleaseBinaries finds each binary of want (by name, its path relative
// to a checkout) in the working directory or one of its parents; what
// names the binaries' owner in the error.
func findReleaseBinaries(want map[string]string, what string) (map[string]string, error) {
	found := map[string]string{}
	for _, dir := range upward() {
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
		return nil, fmt.Errorf("%w; %s needs %s (in the working directory or a parent)", ErrTrainerMissing, what, strings.Join(missing, " and "))
	}
	return found, nil
}
