package migrate

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/scenario"
)

// DefaultManager is the manager of the runtimePatches entry Migrate writes
// when Options.Manager is empty: the one the Kubeflow SDK writes.
const DefaultManager = "trainer.kubeflow.org/kubeflow-sdk"

// trainerGroup is the API group of the TrainJobs Migrate rewrites.
const trainerGroup = "trainer.kubeflow.org"

// Options configure Migrate. The zero value is the default.
type Options struct {
	// Manager is the manager of the one runtimePatches entry written. Empty
	// means DefaultManager. Trainer v2.3.0 wants a domain-prefixed path of
	// at most 253 characters (example.com/name).
	Manager string
	// File names the input in errors and warnings; empty for none.
	File string
}

// Reason says why a Warning was given.
type Reason string

const (
	// Order: two or more overrides of one job set the same merged list with
	// different items, and the items can come out in another order.
	Order Reason = "Order"
	// Dropped: a field Trainer v2.1.0 never applied is left out.
	Dropped Reason = "Dropped"
	// UnknownJob: a target job the TrainJob's runtime does not have, which
	// v2.1.0 rejects and v2.3.0 adds to the JobSet.
	UnknownJob Reason = "UnknownJob"
)

// Warning is one place where the TrainJob Migrate writes can behave on
// Trainer v2.3.0 otherwise than the one it read did on v2.1.0. The
// translation is written all the same.
type Warning struct {
	// Reason says what kind of difference it is.
	Reason Reason
	// File, Line and Column say where in the input; Line is 0 when unknown.
	File         string
	Line, Column int
	// TrainJob is the name of the TrainJob.
	TrainJob string
	// Overrides are the indexes in spec.podTemplateOverrides concerned.
	Overrides []int
	// Jobs are the replicated jobs concerned.
	Jobs []string
	// Field is the path of the field, below the override (for example
	// spec.containers[name=trainer].env).
	Field string
	// Message is one sentence that names the overrides, the jobs and the
	// field, and says what differs and why.
	Message string
}

// String formats w as FILE:LINE:COLUMN: warning: MESSAGE, the way simctl
// lint prints its warnings.
func (w Warning) String() string {
	e := scenario.Error{File: w.File, Line: w.Line, Column: w.Column, Message: "warning: " + w.Message}
	return e.Error()
}

// Migrate rewrites every TrainJob (apiVersion trainer.kubeflow.org/*) of
// data, a stream of YAML documents, and returns the whole stream again with
// the TrainJobs rewritten (see the package documentation) and every other
// document as it was. Key order and comments outside the rewritten fields
// are kept; the YAML is re-indented by two spaces.
//
// Problems with data are returned as a *scenario.Errors naming the file,
// line and field of every one: data is not YAML, a document is not an
// object, there is no TrainJob, a TrainJob already has spec.runtimePatches
// or has nothing to migrate, or an override is not valid for Trainer
// v2.1.0. An invalid Options.Manager is an error of its own.
func Migrate(data []byte, opts Options) ([]byte, []Warning, error) {
	manager, err := opts.manager()
	if err != nil {
		return nil, nil, err
	}
	docs, errs := parse(opts.File, data)
	if len(errs) > 0 {
		return nil, nil, &errs
	}
	known, err := defaultRuntimes()
	if err != nil {
		return nil, nil, err
	}
	for _, doc := range docs {
		known.add(doc.Content[0])
	}
	var warnings []Warning
	trainJobs := 0
	for _, doc := range docs {
		root := doc.Content[0]
		if !isTrainJob(root) {
			continue
		}
		trainJobs++
		t := &trainJob{file: opts.File, root: root, manager: manager, known: known}
		t.migrate()
		slices.SortStableFunc(t.warnings, func(a, b Warning) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
		})
		warnings = append(warnings, t.warnings...)
		errs = append(errs, t.errs...)
	}
	if trainJobs == 0 {
		errs = append(errs, &scenario.Error{File: opts.File, Message: fmt.Sprintf(
			"no TrainJob (apiVersion %s/v1alpha1, kind TrainJob) among its %s: nothing to migrate", trainerGroup, plural(len(docs), "document"))})
	}
	if len(errs) > 0 {
		return nil, nil, &errs
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for _, doc := range docs {
		if err := enc.Encode(doc); err != nil {
			return nil, nil, fmt.Errorf("failed to encode YAML: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, nil, fmt.Errorf("failed to encode YAML: %w", err)
	}
	return out.Bytes(), warnings, nil
}

// manager returns the manager of the entry, checked as Trainer v2.3.0's
// webhook checks it (pkg/runtime/framework/plugins/jobset/jobset.go:176).
func (o Options) manager() (string, error) {
	m := o.Manager
	if m == "" {
		return DefaultManager, nil
	}
	path := field.NewPath("manager")
	errs := validation.IsDomainPrefixedPath(path, m)
	if len(m) > 253 {
		errs = append(errs, field.TooLong(path, m, 253))
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("invalid manager %q: %w", m, errs.ToAggregate())
	}
	return m, nil
}

// parse reads the documents of data, leaving out empty ones. Every document
// must be an object.
func parse(file string, data []byte) (docs []*yaml.Node, errs scenario.Errors) {
	all, err := manifests.Documents(data)
	for i, doc := range all {
		if manifests.Empty(doc) {
			continue
		}
		if root := doc.Content[0]; root.Kind != yaml.MappingNode {
			errs = append(errs, at(file, root, "", "document %d is %s, not a Kubernetes object", i+1, scenario.DescribeNode(root)))
			continue
		}
		docs = append(docs, doc)
	}
	if err != nil {
		return nil, append(errs, scenario.YAMLError(file, data, err))
	}
	return docs, errs
}

// isTrainJob reports whether root is a TrainJob of the trainer's API group.
func isTrainJob(root *yaml.Node) bool {
	apiVersion, kind := typeOf(root)
	group, _, _ := strings.Cut(apiVersion, "/")
	return kind == "TrainJob" && group == trainerGroup
}

// typeOf returns an object's apiVersion and kind.
func typeOf(root *yaml.Node) (apiVersion, kind string) {
	if _, v := lookup(root, "apiVersion"); v != nil {
		apiVersion = v.Value
	}
	if _, v := lookup(root, "kind"); v != nil {
		kind = v.Value
	}
	return apiVersion, kind
}

// at returns a problem at node n (nil: no position).
func at(file string, n *yaml.Node, fieldPath, format string, args ...any) *scenario.Error {
	e := &scenario.Error{File: file, Field: fieldPath, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// plural formats a count of things: "1 document", "2 documents".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
