package migrate

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/sim/fieldpath"
	"github.com/trainersim/trainersim/sim/internal/smpmeta"
	"github.com/trainersim/trainersim/sim/scenario"
)

// trainJob is the migration of one TrainJob document, rewritten in place.
type trainJob struct {
	file    string
	root    *yaml.Node
	manager string
	known   runtimes
	name    string

	warnings []Warning
	errs     scenario.Errors
}

// override is one item of spec.podTemplateOverrides, decoded as Trainer
// v2.1.0 decodes it.
type override struct {
	index int
	// path is spec.podTemplateOverrides[index].
	path string
	node *yaml.Node
	// jobs are the target job names, in order, each once.
	jobs []string
	// patch is the Pod template patch v2.1.0 builds of the override
	// (trainingruntime.go:199-215), as decoded JSON.
	patch map[string]any
	// guide is the override's metadata and spec as written: a mapping with
	// the nodes of the input, for key order and positions.
	guide *yaml.Node
}

// migrate rewrites t.root, or records why it cannot.
func (t *trainJob) migrate() {
	if _, md := lookup(t.root, "metadata"); md != nil {
		if _, n := lookup(md, "name"); n != nil {
			t.name = n.Value
		}
	}
	specKey, spec := lookup(t.root, "spec")
	switch {
	case spec == nil || spec.ShortTag() == "!!null":
		t.errorf(nodeOr(specKey, t.root), "spec", "the TrainJob has no spec: there is nothing to migrate")
		return
	case spec.Kind != yaml.MappingNode:
		t.errorf(spec, "spec", "expected an object, found %s", scenario.DescribeNode(spec))
		return
	}
	if k, _ := lookup(spec, "runtimePatches"); k != nil {
		t.errorf(k, "spec.runtimePatches", "the TrainJob already uses runtimePatches (Trainer v2.2.0 and later): there is nothing to migrate")
		return
	}
	overridesKey, overridesNode := lookup(spec, "podTemplateOverrides")
	labelsKey, labels := lookup(spec, "labels")
	annotationsKey, annotations := lookup(spec, "annotations")
	if overridesKey == nil && labelsKey == nil && annotationsKey == nil {
		t.errorf(specKey, "spec", "the TrainJob has no podTemplateOverrides, labels or annotations: there is nothing to migrate")
		return
	}
	overrides := t.overrides(overridesNode)
	jobSetMetadata := mapping()
	for _, m := range []struct {
		name string
		node *yaml.Node
	}{{"labels", labels}, {"annotations", annotations}} {
		if t.stringMap("spec."+m.name, m.node) && len(m.node.Content) > 0 {
			jobSetMetadata.Content = append(jobSetMetadata.Content, str(m.name), m.node)
		}
	}
	if len(t.errs) > 0 {
		return
	}
	jobs := t.fold(overrides)
	if len(t.errs) > 0 {
		return
	}

	// One entry: the JobSet's labels and annotations, then one item per job.
	template := mapping()
	if len(jobSetMetadata.Content) > 0 {
		template.Content = append(template.Content, str("metadata"), jobSetMetadata)
	}
	if len(jobs) > 0 {
		items := sequence()
		for _, j := range jobs {
			items.Content = append(items.Content, j.render())
		}
		template.Content = append(template.Content, str("spec"), mapping(str("replicatedJobs"), items))
	}

	// spec.runtimePatches takes the place of spec.podTemplateOverrides (or
	// of the first of spec.labels and spec.annotations), with its comments;
	// without anything to patch, the old fields just go.
	first := overridesKey
	if first == nil {
		first = labelsKey
		if first == nil || (annotationsKey != nil && keyIndex(spec, annotationsKey) < keyIndex(spec, first)) {
			first = annotationsKey
		}
	}
	pos := keyIndex(spec, first)
	var content []*yaml.Node
	for i := 0; i+1 < len(spec.Content); i += 2 {
		k := spec.Content[i]
		if i == pos && len(template.Content) > 0 {
			key := str("runtimePatches")
			key.HeadComment, key.LineComment, key.FootComment = k.HeadComment, k.LineComment, k.FootComment
			entry := mapping(str("manager"), str(t.manager), str("trainingRuntimeSpec"), mapping(str("template"), template))
			content = append(content, key, sequence(entry))
		}
		if k == overridesKey || k == labelsKey || k == annotationsKey {
			continue
		}
		content = append(content, k, spec.Content[i+1])
	}
	spec.Content = content
}

// overrides decodes spec.podTemplateOverrides, leaving out those without a
// target job.
func (t *trainJob) overrides(list *yaml.Node) []*override {
	if list == nil || list.ShortTag() == "!!null" {
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		t.errorf(list, "spec.podTemplateOverrides", "expected a list of overrides, found %s", scenario.DescribeNode(list))
		return nil
	}
	var out []*override
	for i, n := range list.Content {
		if o := t.decodeOverride(i, n); o != nil {
			out = append(out, o)
		}
	}
	return out
}

// typeError is the message of a field of the wrong type from the trainer's
// JSON decoder (a copy of encoding/json's).
var typeError = regexp.MustCompile(`^json: cannot unmarshal (.+) into Go (?:struct field \w+\.([^ ]+)|value) of type (.+)$`)

// decodeOverride decodes override i as Trainer v2.1.0 does: the input as
// JSON (as kubectl sends it), decoded case-sensitively into v2.1.0's types
// (as the API server prunes and the trainer decodes it), then the patch
// built of it. Unknown fields are left out with a warning.
func (t *trainJob) decodeOverride(i int, n *yaml.Node) *override {
	o := &override{index: i, path: fieldpath.AppendIndex("spec.podTemplateOverrides", i), node: n}
	if n.Kind != yaml.MappingNode {
		t.errorf(n, o.path, "expected an override (an object), found %s", scenario.DescribeNode(n))
		return nil
	}
	data, err := toJSON(n)
	if err != nil {
		t.errorf(n, o.path, "%v", err)
		return nil
	}
	var decoded podTemplateOverride
	strict, err := kjson.UnmarshalStrict(data, &decoded, kjson.DisallowUnknownFields)
	if err != nil {
		fieldPath, msg := o.path, err.Error()
		if m := typeError.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("expected %s, found a JSON %s", m[3], m[1])
			if m[2] != "" {
				fieldPath += "." + m[2]
			}
		}
		t.errorf(n, fieldPath, "%s", msg)
		return nil
	}

	targetsKey, targets := lookup(n, "targetJobs")
	if targets == nil || targets.ShortTag() == "!!null" {
		t.errorf(nodeOr(targetsKey, n), o.path+".targetJobs", "required: the names of the runtime's jobs to apply the override to")
		return nil
	}
	for k, tj := range decoded.TargetJobs {
		if tj.Name == "" {
			t.errorf(targets.Content[k], fieldpath.AppendIndex(o.path+".targetJobs", k)+".name", "required: the name of a job of the runtime")
		} else if !slices.Contains(o.jobs, tj.Name) {
			o.jobs = append(o.jobs, tj.Name)
		}
	}
	if len(t.errs) > 0 {
		return nil
	}

	for _, e := range strict {
		fe, ok := e.(kjson.FieldError)
		if !ok {
			continue
		}
		segs := parsePath(fe.FieldPath())
		node, rel := locate(n, segs)
		msg := fmt.Sprintf("%s.%s (%s) is not in Trainer v2.1.0's API, so v2.1.0 never applied it: left out", o.path, rel, jobsPhrase(o.jobs))
		if appliedByV23(segs) {
			msg += ", because v2.3.0 would apply it"
		}
		t.warn(Dropped, node, []*override{o}, o.jobs, rel, msg)
	}
	if len(decoded.TargetJobs) == 0 {
		t.warn(Dropped, targets, []*override{o}, nil, "targetJobs",
			fmt.Sprintf("%s.targetJobs is empty, so Trainer v2.1.0 applied the override to no job: left out", o.path))
		return nil
	}
	for k, tj := range decoded.TargetJobs {
		t.checkJob(o, k, tj.Name, targets.Content[k])
	}

	// The patch of trainingruntime.go:199-215: of the metadata only labels
	// and annotations.
	patch := map[string]any{}
	if md := decoded.Metadata; md != nil {
		for _, f := range []struct {
			name string
			set  bool
		}{{"name", md.Name != ""}, {"namespace", md.Namespace != ""}, {"finalizers", len(md.Finalizers) > 0}} {
			if !f.set {
				continue
			}
			_, mdNode := lookup(n, "metadata")
			k, _ := lookup(mdNode, f.name)
			t.warn(Dropped, k, []*override{o}, o.jobs, "metadata."+f.name, fmt.Sprintf(
				"%s.metadata.%s (%s): Trainer v2.1.0 applies only the labels and annotations of an override's metadata: left out, because v2.3.0 would patch it into the Pod template",
				o.path, f.name, jobsPhrase(o.jobs)))
		}
		metadata := map[string]any{}
		if md.Labels != nil {
			metadata["labels"] = md.Labels
		}
		if md.Annotations != nil {
			metadata["annotations"] = md.Annotations
		}
		if len(metadata) > 0 {
			patch["metadata"] = metadata
		}
	}
	if decoded.Spec != nil {
		patch["spec"] = decoded.Spec
	}
	if o.patch, err = normalize(patch); err != nil {
		t.errorf(n, o.path, "%v", err)
		return nil
	}
	o.guide = mapping()
	for _, f := range []string{"metadata", "spec"} {
		if _, v := lookup(n, f); v != nil {
			o.guide.Content = append(o.guide.Content, str(f), v)
		}
	}
	return o
}

// checkJob warns when the TrainJob's runtime is known and has no job name,
// the k-th target of o.
func (t *trainJob) checkJob(o *override, k int, name string, n *yaml.Node) {
	rt, jobs, ok := t.known.of(t.root)
	if !ok || slices.Contains(jobs, name) {
		return
	}
	fp := fieldpath.AppendIndex("targetJobs", k)
	t.warn(UnknownJob, n, []*override{o}, []string{name}, fp, fmt.Sprintf(
		"%s.%s names job %s, which %s does not have (it has %s): Trainer v2.1.0 rejects the TrainJob, v2.3.0 admits it and adds a replicated job %s to the JobSet",
		o.path, fp, name, rt, strings.Join(jobs, ", "), name))
}

// stringMap checks that n, spec.labels or spec.annotations, is absent or a
// map of strings, as v2.1.0's CRD has them.
func (t *trainJob) stringMap(fieldPath string, n *yaml.Node) bool {
	if n == nil || n.ShortTag() == "!!null" {
		return false
	}
	if n.Kind != yaml.MappingNode {
		t.errorf(n, fieldPath, "expected a map of strings, found %s", scenario.DescribeNode(n))
		return false
	}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		if v := n.Content[i+1]; v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
			t.errorf(v, fieldpath.AppendField(fieldPath, n.Content[i].Value), "expected a string, found %s", scenario.DescribeNode(v))
			ok = false
		}
	}
	return ok
}

// warn records a warning at node n (nil: the TrainJob).
func (t *trainJob) warn(reason Reason, n *yaml.Node, overrides []*override, jobs []string, fieldPath, msg string) {
	w := Warning{Reason: reason, File: t.file, TrainJob: t.name, Jobs: jobs, Field: fieldPath, Message: msg}
	for _, o := range overrides {
		w.Overrides = append(w.Overrides, o.index)
	}
	n = nodeOr(n, t.root)
	w.Line, w.Column = n.Line, n.Column
	t.warnings = append(t.warnings, w)
}

// errorf records a problem at node n.
func (t *trainJob) errorf(n *yaml.Node, fieldPath, format string, args ...any) {
	t.errs = append(t.errs, at(t.file, n, fieldPath, format, args...))
}

// toJSON converts a node to JSON as kubectl converts YAML (sigs.k8s.io/yaml).
func toJSON(n *yaml.Node) ([]byte, error) {
	data, err := yaml.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("failed to encode YAML: %w", err)
	}
	data, err = sigsyaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("failed to convert YAML to JSON: %w", err)
	}
	return data, nil
}

// normalize encodes v, as the trainer does, and decodes it again as JSON.
func normalize(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("failed to encode patch: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("failed to decode patch: %w", err)
	}
	return m, nil
}

// pathSegment is one step of a path of the JSON decoder: a field name, or a
// list position when index >= 0.
type pathSegment struct {
	name  string
	index int
}

// parsePath reads a path of sigs.k8s.io/json's strict errors, such as
// spec.containers[0].securityContext. That is not fieldpath's syntax: the
// decoder joins field names with dots as they are, so an unknown field
// "foo bar", "x=y" or "odd]" is spelled raw, where fieldpath.Parse wants it
// quoted and fails.
func parsePath(p string) []pathSegment {
	var segs []pathSegment
	for part := range strings.SplitSeq(p, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			segs = append(segs, pathSegment{name: name, index: -1})
		}
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if err != nil {
				break
			}
			segs = append(segs, pathSegment{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return segs
}

// locate finds the field segs names in an override node: the node of its
// key (for the position) and its path below the override, with list items
// selected by their merge key where they have one.
func locate(n *yaml.Node, segs []pathSegment) (*yaml.Node, string) {
	var (
		meta     strategicpatch.LookupPatchMeta = overrideMeta
		elem                                    = meta
		mergeKey string
		spelled  string
		last     = n
		cur      = n
	)
	for i, s := range segs {
		if s.index < 0 {
			k, v := lookup(cur, s.name)
			spelled = fieldpath.AppendField(spelled, s.name)
			if i+1 < len(segs) && segs[i+1].index >= 0 {
				elem, mergeKey = smpmeta.Slice(meta, s.name)
			} else {
				meta = smpmeta.Field(meta, s.name)
			}
			if k != nil {
				last = k
			}
			cur = v
			continue
		}
		meta = elem
		if cur == nil || cur.Kind != yaml.SequenceNode || s.index >= len(cur.Content) {
			spelled = fieldpath.AppendIndex(spelled, s.index)
			cur = nil
			continue
		}
		item := cur.Content[s.index]
		if _, kv := lookup(item, mergeKey); mergeKey != "" && kv != nil && kv.Kind == yaml.ScalarNode {
			spelled = fieldpath.AppendItem(spelled, mergeKey, kv.Value)
		} else {
			spelled = fieldpath.AppendIndex(spelled, s.index)
		}
		last, cur = item, item
	}
	return last, spelled
}

// jobsPhrase names jobs in a sentence: "job node", "jobs a, b and c".
func jobsPhrase(jobs []string) string {
	switch len(jobs) {
	case 0:
		return "no job"
	case 1:
		return "job " + jobs[0]
	}
	return "jobs " + joinAnd(jobs)
}

// joinAnd joins items in a sentence: "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// nodeOr returns n, or else when n is nil.
func nodeOr(n, otherwise *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return otherwise
}
