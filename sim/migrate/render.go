package migrate

import (
	"maps"
	"math"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v4"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/trainersim/trainersim/sim/fieldpath"
	"github.com/trainersim/trainersim/sim/internal/smpmeta"
)

// render writes a job's item of spec.replicatedJobs: its name and, when the
// fold patches anything, its Pod template patch.
func (j *jobPatch) render() *yaml.Node {
	item := mapping(str("name"), str(j.name))
	if len(j.value) == 0 {
		return item
	}
	guides := make([]*yaml.Node, len(j.overrides))
	for i, o := range j.overrides {
		guides[i] = o.guide
	}
	podTemplate := renderMap(j.value, guides, smpmeta.PodTemplate)
	item.Content = append(item.Content, str("template"), mapping(str("spec"), mapping(str("template"), podTemplate)))
	return item
}

// renderMap writes m (decoded JSON) as YAML. guides are the nodes of the
// same place in the overrides, in list order: keys come in the order they
// were first written there (the rest sorted), with their comments, and
// scalars in the style they were written in.
func renderMap(m map[string]any, guides []*yaml.Node, meta strategicpatch.LookupPatchMeta) *yaml.Node {
	var keys []string
	for _, g := range guides {
		if g == nil || g.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(g.Content); i += 2 {
			if k := g.Content[i].Value; hasKey(m, k) && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	n := mapping()
	for _, k := range keys {
		key := str(k)
		var children []*yaml.Node
		for _, g := range guides {
			gk, gv := lookup(g, k)
			if gv == nil {
				continue
			}
			if len(children) == 0 {
				key.HeadComment, key.LineComment, key.FootComment = gk.HeadComment, gk.LineComment, gk.FootComment
			}
			children = append(children, gv)
		}
		var value *yaml.Node
		switch v := m[k].(type) {
		case map[string]any:
			value = renderMap(v, children, smpmeta.Field(meta, k))
		case []any:
			elem, mergeKey := smpmeta.Slice(meta, k)
			value = renderList(v, children, elem, mergeKey)
		default:
			value = renderScalar(v, children)
		}
		n.Content = append(n.Content, key, value)
	}
	return n
}

// renderList writes a list. An item of a list merged by key is guided by the
// items of the same key; a list replaced whole comes from the last override
// that has it, so its items are guided by that one's, by position.
func renderList(list []any, guides []*yaml.Node, elem strategicpatch.LookupPatchMeta, mergeKey string) *yaml.Node {
	n := sequence()
	for i, item := range list {
		var itemGuides []*yaml.Node
		if obj, ok := item.(map[string]any); ok && mergeKey != "" {
			kv := fieldpath.KeyValue(obj[mergeKey])
			for _, g := range guides {
				if gi := findItem(g, mergeKey, kv); gi != nil {
					itemGuides = append(itemGuides, gi)
				}
			}
		} else if len(guides) > 0 {
			if g := guides[len(guides)-1]; g.Kind == yaml.SequenceNode && i < len(g.Content) {
				itemGuides = []*yaml.Node{g.Content[i]}
			}
		}
		switch v := item.(type) {
		case map[string]any:
			n.Content = append(n.Content, renderMap(v, itemGuides, elem))
		case []any:
			n.Content = append(n.Content, renderList(v, itemGuides, nil, ""))
		default:
			n.Content = append(n.Content, renderScalar(v, itemGuides))
		}
	}
	return n
}

// renderScalar writes a JSON scalar, in the style of the last guide that
// holds the same value.
func renderScalar(v any, guides []*yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: scalarValue(v)}
	switch v.(type) {
	case string:
		n.Tag = "!!str"
	case bool:
		n.Tag = "!!bool"
	case float64:
		n.Tag = "!!float"
		if f := v.(float64); f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			n.Tag = "!!int"
		}
	case nil:
		n.Tag = "!!null"
	}
	for _, g := range slices.Backward(guides) {
		if g.Kind == yaml.ScalarNode && g.Value == n.Value {
			n.Style = g.Style &^ yaml.TaggedStyle
			n.LineComment = g.LineComment
			break
		}
	}
	return n
}

// scalarValue writes a JSON scalar as YAML text.
func scalarValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case nil:
		return "null"
	}
	return ""
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// lookup returns the key and value nodes of name in mapping n, or nils.
func lookup(n *yaml.Node, name string) (key, value *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// keyIndex returns the position of key node k in mapping n's content, or -1.
func keyIndex(n, k *yaml.Node) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i] == k {
			return i
		}
	}
	return -1
}

// findItem returns the item of list n whose field key has value v, or nil.
func findItem(n *yaml.Node, key, v string) *yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	for _, item := range n.Content {
		if _, kv := lookup(item, key); kv != nil && kv.Kind == yaml.ScalarNode && kv.Value == v {
			return item
		}
	}
	return nil
}

func mapping(content ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: content}
}

func sequence(content ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: content}
}

func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}
