package releases

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/trainersim/trainersim/fixtures"
)

// The Kubeflow Trainer releases the harness runs. The one go.mod pins
// (TrainerVersion) runs in simctl's process, with the explain agreement hook;
// every other runs as two processes built by `make assets` from a nested
// module hack/trainer/<version>/, the Trainer's trainer-controller-manager and
// JobSet's manager at the version that release's go.mod pins: the binaries a
// cluster runs in their images. Each release brings its own CRDs, webhook
// configurations and default runtimes (fixtures/releases/<version>/).

// Trainer is one Trainer release the harness can run.
type Trainer struct {
	// Version is the Trainer's, e.g. v2.2.1.
	Version string
	// JobSet is the JobSet version the release's go.mod pins.
	JobSet string
}

// Trainers are the supported releases, oldest first. A unit test
// checks each against hack/trainer/<version>/go.mod and fixtures/releases.
var Trainers = []Trainer{
	{Version: "v2.1.0", JobSet: "v0.10.1"},
	{Version: "v2.2.0", JobSet: "v0.11.1"},
	{Version: "v2.2.1", JobSet: "v0.11.1"},
	{Version: TrainerVersion, JobSet: JobSetVersion},
}

// TrainerVersions lists the supported versions, oldest first.
func TrainerVersions() []string {
	out := make([]string, len(Trainers))
	for i, r := range Trainers {
		out[i] = r.Version
	}
	return out
}

// LookupTrainer returns the release of version ("" is the pinned one; the
// leading v may be left out). The error lists the supported versions.
func LookupTrainer(version string) (Trainer, error) {
	if version == "" {
		version = TrainerVersion
	}
	given := version
	if !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	for _, r := range Trainers {
		if r.Version == version {
			return r, nil
		}
	}
	if !semver.IsValid(version) {
		return Trainer{}, fmt.Errorf("invalid Trainer version %q: give one of %s", given, strings.Join(TrainerVersions(), ", "))
	}
	return Trainer{}, fmt.Errorf("unsupported Trainer version %s: trainersim runs %s", version, strings.Join(TrainerVersions(), ", "))
}

// InProcess reports whether the release is the one compiled into simctl.
func (r Trainer) InProcess() bool { return r.Version == TrainerVersion }

// Fixtures holds the release's crds/, webhooks/ and runtimes/, laid out like
// fixtures.FS.
func (r Trainer) Fixtures() fs.FS {
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
