package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/scenario"
)

// DefaultNamespace is the namespace of a TrainJob file without one.
const DefaultNamespace = "default"

// FromFiles is explain without a cluster. It reads a TrainJob from
// trainJobFile (a YAML file whose documents are exactly one TrainJob and any
// number of TrainingRuntimes and ClusterTrainingRuntimes), more runtimes
// from runtimeFiles, and returns an Engine whose trainer reads, from memory
// (NewForObjects), those runtimes plus the trainer's default
// ClusterTrainingRuntimes embedded in fixtures/ (a runtime of a file replaces
// a default one of the same name). Every object gets its CRD's defaults and
// loses the fields its CRD does not know, as on the API server, from the
// CRDs in fixtures/; a TrainJob without a namespace is in DefaultNamespace,
// and a TrainingRuntime without one in the TrainJob's namespace.
//
// Problems with the files are returned as *scenario.Errors naming the file,
// line and field.
func FromFiles(ctx context.Context, trainJobFile string, runtimeFiles []string) (*Engine, *trainer.TrainJob, error) {
	var errs scenario.Errors
	var trainJob *trainer.TrainJob
	var runtimes []client.Object
	objs, problems := readObjects(trainJobFile)
	errs = append(errs, problems...)
	for _, o := range objs {
		if tj, ok := o.obj.(*trainer.TrainJob); ok {
			if trainJob != nil {
				errs = append(errs, o.errorf("", "a second TrainJob: the file holds exactly one"))
				continue
			}
			trainJob = tj
			continue
		}
		runtimes = append(runtimes, o.obj)
	}
	if trainJob == nil && len(problems) == 0 {
		errs = append(errs, &scenario.Error{File: filepath.Clean(trainJobFile), Message: "no TrainJob in the file"})
	}
	for _, f := range runtimeFiles {
		objs, problems := readObjects(f)
		errs = append(errs, problems...)
		for _, o := range objs {
			if _, ok := o.obj.(*trainer.TrainJob); ok {
				errs = append(errs, o.errorf("kind", "a TrainJob in a --runtime file: give it as the first argument"))
				continue
			}
			runtimes = append(runtimes, o.obj)
		}
	}
	if len(errs) > 0 {
		return nil, nil, &errs
	}
	if trainJob.Namespace == "" {
		trainJob.Namespace = DefaultNamespace
	}
	defaults, err := DefaultRuntimes()
	if err != nil {
		return nil, nil, err
	}
	all := map[string]client.Object{}
	var order []string
	for _, o := range append(defaults, runtimes...) {
		if _, ok := o.(*trainer.TrainingRuntime); ok && o.GetNamespace() == "" {
			o.SetNamespace(trainJob.Namespace)
		}
		key := fmt.Sprintf("%T/%s/%s", o, o.GetNamespace(), o.GetName())
		if _, dup := all[key]; !dup {
			order = append(order, key)
		}
		all[key] = o
	}
	objects := make([]client.Object, 0, len(order))
	for _, k := range order {
		objects = append(objects, all[k])
	}
	e, err := NewForObjects(ctx, objects...)
	if err != nil {
		return nil, nil, err
	}
	return e, trainJob, nil
}

// DefaultRuntimes returns the trainer's default ClusterTrainingRuntimes,
// embedded in fixtures/, with their CRD's defaults.
func DefaultRuntimes() ([]client.Object, error) {
	entries, err := fs.ReadDir(fixtures.FS, fixtures.RuntimeDir)
	if err != nil {
		return nil, fmt.Errorf("failed to read the default runtimes: %w", err)
	}
	var out []client.Object
	for _, e := range entries {
		p := path.Join(fixtures.RuntimeDir, e.Name())
		data, err := fs.ReadFile(fixtures.FS, p)
		if err != nil {
			return nil, fmt.Errorf("failed to read %s: %w", p, err)
		}
		objs, problems := decodeObjects(p, data)
		if len(problems) > 0 {
			return nil, fmt.Errorf("failed to decode the default runtimes: %w", &problems)
		}
		for _, o := range objs {
			out = append(out, o.obj)
		}
	}
	return out, nil
}

// object is one decoded document and where it came from.
type object struct {
	obj  client.Object
	file string
	root *yaml.Node
}

// errorf reports a problem at the value of field.
func (o object) errorf(field, format string, args ...any) *scenario.Error {
	return o.at(locate(o.root, field), field, format, args...)
}

// keyErrorf reports a problem at the key of field: an unknown field.
func (o object) keyErrorf(field, format string, args ...any) *scenario.Error {
	n := locate(o.root, field)
	if i := strings.LastIndexByte(field, '.'); i >= 0 || !strings.Contains(field, "[") {
		parent := locate(o.root, field[:max(i, 0)])
		if i < 0 {
			parent = o.root
		}
		if k := key(parent, field[i+1:]); k != nil {
			n = k
		}
	}
	return o.at(n, field, format, args...)
}

func (o object) at(n *yaml.Node, field, format string, args ...any) *scenario.Error {
	e := &scenario.Error{File: o.file, Field: field, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// key returns the key node of name in mapping n, or nil.
func key(n *yaml.Node, name string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i]
		}
	}
	return nil
}

// readObjects reads and decodes every document of a file.
func readObjects(file string) ([]object, scenario.Errors) {
	data, err := os.ReadFile(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, scenario.Errors{{File: filepath.Clean(file), Message: "failed to read file: " + err.Error()}}
	}
	return decodeObjects(filepath.Clean(file), data)
}

// decodeObjects decodes the TrainJobs, TrainingRuntimes and
// ClusterTrainingRuntimes of a YAML stream, as the API server would store
// them: pruned of unknown fields (each one an error here) and defaulted.
func decodeObjects(file string, data []byte) ([]object, scenario.Errors) {
	var out []object
	var errs scenario.Errors
	docs, err := manifests.Documents(data)
	for _, doc := range docs {
		if manifests.Empty(doc) {
			continue
		}
		o, problems := decodeObject(file, doc.Content[0])
		errs = append(errs, problems...)
		if o != nil {
			out = append(out, *o)
		}
	}
	if err != nil {
		errs = append(errs, scenario.YAMLError(file, data, err))
	}
	return out, errs
}

// kinds maps the kinds explain reads to their CRD file in fixtures/ and a
// new typed object.
var kinds = map[string]struct {
	crd string
	new func() client.Object
}{
	trainer.TrainJobKind:               {"trainer.kubeflow.org_trainjobs.yaml", func() client.Object { return &trainer.TrainJob{} }},
	trainer.TrainingRuntimeKind:        {"trainer.kubeflow.org_trainingruntimes.yaml", func() client.Object { return &trainer.TrainingRuntime{} }},
	trainer.ClusterTrainingRuntimeKind: {"trainer.kubeflow.org_clustertrainingruntimes.yaml", func() client.Object { return &trainer.ClusterTrainingRuntime{} }},
}

func decodeObject(file string, root *yaml.Node) (*object, scenario.Errors) {
	o := object{file: file, root: root}
	if root.Kind != yaml.MappingNode {
		return nil, scenario.Errors{o.errorf("", "expected a Kubernetes object (a mapping), found %s", root.Tag)}
	}
	var u map[string]any
	if err := root.Decode(&u); err != nil {
		return nil, scenario.Errors{o.errorf("", "invalid YAML: %v", err)}
	}
	apiVersion, _ := u["apiVersion"].(string)
	kind, _ := u["kind"].(string)
	k, known := kinds[kind]
	switch {
	case kind == "Scenario":
		return nil, scenario.Errors{o.errorf("kind", "a scenario file: explain reads a TrainJob, so copy the TrainJob of one of its steps into a file of its own")}
	case !known:
		return nil, scenario.Errors{o.errorf("kind", "kind %q is not a TrainJob, TrainingRuntime or ClusterTrainingRuntime", kind)}
	case apiVersion != trainer.GroupVersion.String():
		return nil, scenario.Errors{o.errorf("apiVersion", "apiVersion %q: want %s", apiVersion, trainer.GroupVersion.String())}
	}
	s, err := crdSchema(k.crd)
	if err != nil {
		return nil, scenario.Errors{o.errorf("", "%v", err)}
	}
	// The API server's order: prune unknown fields, then default.
	var errs scenario.Errors
	for _, p := range s.Prune(u) {
		errs = append(errs, o.keyErrorf(p, "unknown field"))
	}
	s.Default(u)
	data, err := json.Marshal(u)
	if err != nil {
		return nil, append(errs, o.errorf("", "failed to encode: %v", err))
	}
	obj := k.new()
	jd := json.NewDecoder(bytes.NewReader(data))
	jd.DisallowUnknownFields()
	if err := jd.Decode(obj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, append(errs, o.errorf(te.Field, "expected %s, found a JSON %s", te.Type, te.Value))
		}
		return nil, append(errs, o.errorf("", "invalid %s: %v", kind, err))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	o.obj = obj
	return &o, nil
}

// crdSchema returns the schema of the served version of a trainer CRD in
// fixtures/.
func crdSchema(file string) (*manifests.CRDSchema, error) {
	return manifests.ReadCRDSchema("fixtures", fixtures.FS, path.Join(fixtures.CRDDir, "trainer", file), trainer.GroupVersion.Version)
}

// locate finds the YAML node of a field path such as spec.runtimePatches[0].x
// (the pruner's paths) or spec.trainer.numNodes (encoding/json's, without
// list indexes: the first item that has the field is taken). It returns the
// deepest node found, root for an empty path, nil when root is nil.
func locate(root *yaml.Node, field string) *yaml.Node {
	n := root
	if n == nil || field == "" {
		return n
	}
	for _, seg := range splitPath(field) {
		next := child(n, seg)
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// splitPath splits a.b[0].c into a, b, [0], c.
func splitPath(p string) []string {
	var out []string
	for _, part := range strings.Split(p, ".") {
		for part != "" {
			i := strings.IndexByte(part, '[')
			switch {
			case i < 0:
				out = append(out, part)
				part = ""
			case i > 0:
				out = append(out, part[:i])
				part = part[i:]
			default:
				j := strings.IndexByte(part, ']')
				if j < 0 {
					out = append(out, part)
					part = ""
					continue
				}
				out = append(out, part[:j+1])
				part = part[j+1:]
			}
		}
	}
	return out
}

// child returns the node of one path segment below n: a mapping's value, a
// sequence's [i]th item, or for a field name below a sequence, that field of
// the first item that has it.
func child(n *yaml.Node, seg string) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if strings.HasPrefix(seg, "[") {
			i, err := strconv.Atoi(strings.Trim(seg, "[]"))
			if err == nil && i >= 0 && i < len(n.Content) {
				return n.Content[i]
			}
			return nil
		}
		for _, item := range n.Content {
			if c := child(item, seg); c != nil {
				return c
			}
		}
	}
	return nil
}
