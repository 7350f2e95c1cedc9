package migrate

import (
	"io/fs"
	"maps"
	"path"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/trainersim/trainersim/fixtures"
)

// runtimes are the runtimes whose replicated jobs Migrate knows, by
// "Kind/name": the trainer's default ClusterTrainingRuntimes and those of
// the input.
type runtimes map[string]knownRuntime

type knownRuntime struct {
	// desc names the runtime in a sentence.
	desc string
	jobs []string
}

// defaultRuntimes returns the trainer's default ClusterTrainingRuntimes of
// fixtures/runtimes (those of the trainer go.mod pins).
func defaultRuntimes() runtimes {
	return maps.Clone(loadDefaultRuntimes())
}

var loadDefaultRuntimes = sync.OnceValue(func() runtimes {
	r := runtimes{}
	entries, _ := fs.ReadDir(fixtures.FS, fixtures.RuntimeDir)
	for _, e := range entries {
		data, err := fs.ReadFile(fixtures.FS, path.Join(fixtures.RuntimeDir, e.Name()))
		if err != nil {
			continue
		}
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
			continue
		}
		r.addAs(doc.Content[0], "the default ")
	}
	return r
})

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
