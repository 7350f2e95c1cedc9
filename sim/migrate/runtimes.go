package migrate

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"strings"
	"sync"

	"go.yaml.in/yaml/v4"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/manifests"
)

// runtimes are the runtimes whose replicated jobs Migrate knows, by
// "Kind/name": the default ClusterTrainingRuntimes of SourceRelease and
// those of the input.
type runtimes map[string]knownRuntime

type knownRuntime struct {
	// desc names the runtime in a sentence.
	desc string
	jobs []string
}

// SourceRelease is the Trainer release whose TrainJobs Migrate reads: the
// last with spec.podTemplateOverrides. Its default ClusterTrainingRuntimes
// are those Migrate checks target jobs against.
const SourceRelease = "v2.1.0"

// defaultRuntimes returns the default ClusterTrainingRuntimes of
// SourceRelease, embedded in fixtures/releases/.
func defaultRuntimes() (runtimes, error) {
	r, err := loadDefaultRuntimes()
	return maps.Clone(r), err
}

var loadDefaultRuntimes = sync.OnceValues(func() (runtimes, error) {
	return readRuntimes(fixtures.FS, path.Join(fixtures.ReleasesDir, SourceRelease, fixtures.RuntimeDir))
})

// readRuntimes reads the runtimes of every file of dir in fsys, as default
// ones.
func readRuntimes(fsys fs.FS, dir string) (runtimes, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("failed to read Trainer %s's default runtimes: %w", SourceRelease, err)
	}
	r := runtimes{}
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("failed to read Trainer %s's default runtimes: %w", SourceRelease, err)
		}
		docs, err := manifests.Documents(data)
		if err != nil {
			return nil, fmt.Errorf("failed to decode %s: %w", p, err)
		}
		for _, doc := range docs {
			if !manifests.Empty(doc) {
				r.addAs(doc.Content[0], "the default ")
			}
		}
	}
	return r, nil
}

// add adds root when it is a TrainingRuntime or ClusterTrainingRuntime.
func (r runtimes) add(root *yaml.Node) {
	r.addAs(root, "")
}

func (r runtimes) addAs(root *yaml.Node, prefix string) {
	apiVersion, kind := typeOf(root)
	group, _, _ := strings.Cut(apiVersion, "/")
	if group != trainerGroup || (kind != "TrainingRuntime" && kind != "ClusterTrainingRuntime") {
		return
	}
	_, md := lookup(root, "metadata")
	_, name := lookup(md, "name")
	if name == nil {
		return
	}
	_, spec := lookup(root, "spec")
	_, template := lookup(spec, "template")
	_, templateSpec := lookup(template, "spec")
	_, list := lookup(templateSpec, "replicatedJobs")
	var jobs []string
	if list != nil {
		for _, item := range list.Content {
			if _, n := lookup(item, "name"); n != nil {
				jobs = append(jobs, n.Value)
			}
		}
	}
	r[kind+"/"+name.Value] = knownRuntime{desc: prefix + kind + " " + name.Value, jobs: jobs}
}

// of returns the runtime a TrainJob refers to, when known.
func (r runtimes) of(trainJob *yaml.Node) (desc string, jobs []string, ok bool) {
	_, spec := lookup(trainJob, "spec")
	_, ref := lookup(spec, "runtimeRef")
	_, name := lookup(ref, "name")
	if name == nil {
		return "", nil, false
	}
	kind, group := "ClusterTrainingRuntime", trainerGroup // the CRD's defaults
	if _, k := lookup(ref, "kind"); k != nil {
		kind = k.Value
	}
	if _, g := lookup(ref, "apiGroup"); g != nil {
		group = g.Value
	}
	rt, ok := r[kind+"/"+name.Value]
	if group != trainerGroup || !ok {
		return "", nil, false
	}
	return rt.desc, rt.jobs, true
}
