package v1alpha1

import (
	"fmt"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/trainersim/trainersim/sim/releases"
)

// What the scenario format knows of Kubeflow Trainer releases: which ones a
// scenario may name, and which TrainJob fields each release has.

// ComponentKueue is the component of the real Kueue manager.
const ComponentKueue = releases.ComponentKueue

// Components are the components a scenario may ask for
// (releases.Components).
var Components = releases.Components

// ClusterComponents are the components every cluster simctl starts runs,
// whose requests a gate may hold besides those of Components
// (releases.ClusterComponents).
var ClusterComponents = releases.ClusterComponents

// TrainerVersions are the Trainer releases trainersim runs, oldest first
// (releases.Trainers).
var TrainerVersions = releases.TrainerVersions()

// Trainer says which Trainer releases a scenario holds for.
type Trainer struct {
	// Versions is a semver range of Trainer releases: comparisons
	// (>=v2.2.0, <v2.3.0, =v2.2.1, or a bare version) separated by spaces
	// must all hold, and || separates alternatives. A run on a release
	// outside it skips the scenario (reported as skipped, with the range);
	// lint checks that every TrainJob field the scenario writes exists in
	// every supported release inside it.
	Versions string `json:"versions"`
}

// VersionedField is a TrainJob field that only some releases have.
type VersionedField struct {
	// Path is the field, from the TrainJob's root; [] marks every element
	// of a list.
	Path string
	// Versions is the range of releases that have it.
	Versions string
}

// TrainJobFields are the TrainJob fields that differ between the supported
// releases (read from each release's API types).
var TrainJobFields = []VersionedField{
	{Path: "spec.podTemplateOverrides", Versions: "<v2.2.0"},
	{Path: "spec.labels", Versions: "<v2.2.0"},
	{Path: "spec.annotations", Versions: "<v2.2.0"},
	{Path: "spec.runtimePatches", Versions: ">=v2.2.0"},
	{Path: "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec.terminationGracePeriodSeconds", Versions: ">=v2.3.0"},
}

// VersionRange is a parsed Trainer.Versions.
type VersionRange struct {
	text string
	// alternatives of conjunctions of comparisons.
	any [][]comparison
}

type comparison struct {
	op      string // one of >=, <=, >, <, =
	version string
}

// ParseVersionRange parses a range as Trainer.Versions describes it.
func ParseVersionRange(s string) (VersionRange, error) {
	r := VersionRange{text: strings.TrimSpace(s)}
	if r.text == "" {
		return r, fmt.Errorf("empty range: give comparisons such as \">=v2.2.0\"")
	}
	for _, alt := range strings.Split(r.text, "||") {
		var all []comparison
		for _, term := range strings.Fields(alt) {
			c := comparison{op: "="}
			for _, op := range []string{">=", "<=", ">", "<", "="} {
				if rest, ok := strings.CutPrefix(term, op); ok {
					c.op, term = op, rest
					break
				}
			}
			if !semver.IsValid(term) || semver.Canonical(term) != term {
				return r, fmt.Errorf("invalid version %q in range %q: a comparison is >=, <=, >, < or = and a version such as v2.2.0", term, r.text)
			}
			c.version = term
			all = append(all, c)
		}
		if len(all) == 0 {
			return r, fmt.Errorf("empty alternative in range %q", r.text)
		}
		r.any = append(r.any, all)
	}
	return r, nil
}

// Contains reports whether version is in the range.
func (r VersionRange) Contains(version string) bool {
	for _, all := range r.any {
		ok := true
		for _, c := range all {
			cmp := semver.Compare(version, c.version)
			switch c.op {
			case ">=":
				ok = ok && cmp >= 0
			case "<=":
				ok = ok && cmp <= 0
			case ">":
				ok = ok && cmp > 0
			case "<":
				ok = ok && cmp < 0
			default:
				ok = ok && cmp == 0
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Supported returns the TrainerVersions in the range, oldest first.
func (r VersionRange) Supported() []string {
	var out []string
	for _, v := range TrainerVersions {
		if r.Contains(v) {
			out = append(out, v)
		}
	}
	return out
}

// MustParseVersionRange is ParseVersionRange for ranges written in code.
func MustParseVersionRange(s string) VersionRange {
	r, err := ParseVersionRange(s)
	if err != nil {
		panic(err)
	}
	return r
}

// HasTrainJobField reports whether the TrainJob of the Trainer release
// version has the field path, spelled as TrainJobFields spells it
// ("spec.runtimePatches"): a field that list does not name is in every
// release.
func HasTrainJobField(version, path string) bool {
	for _, f := range TrainJobFields {
		if f.Path == path {
			return MustParseVersionRange(f.Versions).Contains(version)
		}
	}
	return true
}
