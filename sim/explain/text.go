package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/sim/internal/smpmeta"
)

// Output formats of Write.
const (
	// FormatText is for a person: see WriteText.
	FormatText = "text"
	// FormatJSON is the Result as indented JSON.
	FormatJSON = "json"
	// FormatYAML is the Result as YAML.
	FormatYAML = "yaml"
)

// Formats lists the formats Write accepts.
var Formats = []string{FormatText, FormatJSON, FormatYAML}

// maxCell is the longest value printed whole in the field table; longer ones
// are cut (the full value is in the final Pod templates above the table).
const maxCell = 60

// Write writes r in one of Formats.
func (r *Result) Write(w io.Writer, format string) error {
	switch format {
	case FormatText:
		return r.WriteText(w)
	case FormatJSON:
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return fmt.Errorf("failed to encode the result as JSON: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	case FormatYAML:
		data, err := yaml.Marshal(r)
		if err != nil {
			return fmt.Errorf("failed to encode the result as YAML: %w", err)
		}
		_, err = w.Write(data)
		return err
	default:
		return fmt.Errorf("unknown output format %q: want %s", format, strings.Join(Formats, ", "))
	}
}

// WriteText writes r for a person: the layers in merge order with what each
// adds, the final Pod templates, a table of every final field with the layer
// that set it and the value it overrode, the overrides and the overlaps.
// Paths in the table are relative to each replicated job's Pod template.
func (r *Result) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.printf("TrainJob %s/%s on %s %s", r.TrainJob.Namespace, r.TrainJob.Name, r.Runtime.Kind, r.Runtime.Name)
	if r.Runtime.Snapshot != "" {
		p.printf(" (read from its runtime snapshot ConfigMap %s)\n", r.Runtime.Snapshot)
	} else {
		p.printf(" (read from the runtime: no runtime snapshot yet)\n")
	}

	p.printf("\nLAYERS, in the order the trainer merges them\n")
	tw := tabwriter.NewWriter(p, 0, 0, 2, ' ', 0)
	for _, l := range r.Layers {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", l.Index, layerLabel(l), r.layerTitle(l), r.layerSummary(l))
	}
	_ = tw.Flush()

	for _, l := range r.Layers {
		p.printf("\n%d %s: %s", l.Index, layerLabel(l), r.layerTitle(l))
		switch l.Kind {
		case KindRuntime:
			p.printf(", its Pod templates\n")
			for _, pt := range l.PodTemplates {
				p.block(pt.ReplicatedJob+":", compact(pt.Template, smpmeta.PodTemplate))
			}
		case KindTrainJob:
			p.printf(" without runtimePatches, which the trainer's plugins turn into Pod template fields\n")
			p.block("", l.Input)
		default:
			p.entry(l)
		}
	}

	p.printf("\nFINAL Pod templates, from the JobSet the trainer builds\n")
	final := r.Layers[len(r.Layers)-1]
	for _, pt := range final.PodTemplates {
		p.block(pt.ReplicatedJob+":", compact(pt.Template, smpmeta.PodTemplate))
	}

	for _, pt := range final.PodTemplates {
		prefix := podTemplatePath(pt.ReplicatedJob)
		p.printf("\nFIELDS of %s\n", prefix)
		tw := tabwriter.NewWriter(p, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FIELD\tVALUE\tSET BY\tOVERRODE")
		for _, f := range r.Fields {
			rel, ok := relative(f.Path, prefix)
			if !ok {
				continue
			}
			over := ""
			if f.Overrode != nil {
				over = fmt.Sprintf("%s (%s)", cell(f.Overrode.Value), f.Overrode.SetBy)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rel, cell(f.Value), f.SetBy, over)
		}
		_ = tw.Flush()
	}

	p.printf("\nOVERRIDES: where a later layer overwrote, replaced, removed or merged into an earlier one\n")
	if len(r.Overrides) == 0 {
		p.printf("  none\n")
	}
	for _, o := range r.Overrides {
		p.printf("  %d %s %s %s", o.Layer, o.By, o.Kind, o.Path)
		switch o.Kind {
		case Merged:
			var parts []string
			for _, part := range []struct {
				what string
				ids  []string
			}{{"added", o.Added}, {"updated", o.Updated}, {"kept", o.Kept}} {
				if len(part.ids) > 0 {
					parts = append(parts, part.what+" "+strings.Join(part.ids, ", "))
				}
			}
			p.printf(" by %s: %s\n", o.MergeKey, strings.Join(parts, "; "))
		case Removed:
			p.printf("\n      was %s (%s)\n", value(o.Old.Value), o.Old.SetBy)
		default:
			p.printf("\n      was %s (%s)\n      now %s\n", value(o.Old.Value), o.Old.SetBy, value(o.New))
		}
	}

	p.printf("\nOVERLAPS: fields two or more runtimePatches entries set\n")
	if len(r.Overlaps) == 0 {
		p.printf("  none\n")
	}
	for _, o := range r.Overlaps {
		p.printf("  %s\n", o.Path)
		for i, m := range o.Managers {
			p.printf("      %s sets %s\n", m, value(o.Values[i]))
		}
	}
	return p.err
}

// layerLabel is "runtime", "trainjob" or "entry N".
func layerLabel(l Layer) string {
	if l.Kind == KindEntry {
		return fmt.Sprintf("entry %d", l.Index-1)
	}
	return l.Kind
}

// layerTitle says what a layer is.
func (r *Result) layerTitle(l Layer) string {
	switch l.Kind {
	case KindRuntime:
		return r.Runtime.Kind + " " + r.Runtime.Name
	case KindTrainJob:
		return "the TrainJob's spec"
	}
	return l.Name
}

// layerSummary counts what a layer did.
func (r *Result) layerSummary(l Layer) string {
	s := plural(len(l.Set), "field")
	if l.Index > 0 {
		s = "sets " + s
	}
	n := 0
	for _, o := range r.Overrides {
		if o.Layer == l.Index {
			n++
		}
	}
	if n > 0 {
		s += ", " + plural(n, "override")
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// relative returns path relative to a Pod template prefix.
func relative(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix)
	switch {
	case !ok:
		return "", false
	case rest == "":
		return ".", true
	case rest[0] == '.':
		return rest[1:], true
	case rest[0] == '[':
		return rest, true
	}
	return "", false
}

// cell renders a value for the table, cut to maxCell runes.
func cell(v any) string {
	s := value(v)
	if r := []rune(s); len(r) > maxCell {
		return string(r[:maxCell-3]) + "..."
	}
	return s
}

// value renders a value as compact JSON.
func value(v any) string {
	return canonical(v)
}

// printer writes and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.w.Write(b)
	p.err = err
	return n, err
}

func (p *printer) printf(format string, args ...any) {
	fmt.Fprintf(p, format, args...)
}

// block writes a title and v as YAML, indented.
func (p *printer) block(title string, v any) {
	indent := "  "
	if title != "" {
		p.printf("  %s\n", title)
		indent = "    "
	}
	data, err := yaml.Marshal(v)
	if err != nil {
		p.printf("%s<%v>\n", indent, err)
		return
	}
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		p.printf("%s%s\n", indent, line)
	}
}

// entry writes what a runtimePatches entry adds: its JobSet metadata, then
// per replicated job its Job template metadata and its Pod template.
func (p *printer) entry(l Layer) {
	in, _ := l.Input.(map[string]any)
	tmpl, _ := in["template"].(map[string]any)
	if len(tmpl) == 0 {
		p.printf(", no trainingRuntimeSpec: adds nothing\n")
		return
	}
	p.printf(", its trainingRuntimeSpec.template\n")
	if md, ok := tmpl["metadata"].(map[string]any); ok && len(withoutNulls(md)) > 0 {
		p.block("JobSet metadata:", withoutNulls(md))
	}
	spec, _ := tmpl["spec"].(map[string]any)
	rjobs, _ := spec["replicatedJobs"].([]any)
	var names []string
	for _, raw := range rjobs {
		rj, _ := raw.(map[string]any)
		name, _ := rj["name"].(string)
		names = append(names, name)
		job, _ := rj["template"].(map[string]any)
		if md, ok := job["metadata"].(map[string]any); ok && len(withoutNulls(md)) > 0 {
			p.block(name+" Job template metadata:", withoutNulls(md))
		}
		js, _ := job["spec"].(map[string]any)
		if pt, ok := js["template"].(map[string]any); ok {
			if md, ok := pt["metadata"].(map[string]any); ok {
				pt = clone(pt)
				if clean := withoutNulls(md); len(clean) > 0 {
					pt["metadata"] = clean
				} else {
					delete(pt, "metadata")
				}
			}
			p.block(name+":", pt)
		}
	}
	if len(names) == 0 && len(withoutNulls(tmpl)) == 0 {
		p.printf("  (empty)\n")
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// withoutNulls drops the null fields (creationTimestamp: null) of a map.
func withoutNulls(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if v != nil {
			out[k] = v
		}
	}
	return out
}
