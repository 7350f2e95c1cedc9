package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
)

// The format's enums and ranges are the JSON schema's (v1alpha1.Schema,
// generated from the markers on the types): the loader checks the decoded
// document against the same schema editors use, with the position of each
// field, so that the two cannot disagree. Structure (unknown fields, types)
// is the decoder's, with its did-you-mean; patterns and what relates one
// field to another are validate.go's.

// jsonSchema is the part of a JSON schema the loader reads.
type jsonSchema struct {
	Ref                  string                 `json:"$ref"`
	Title                string                 `json:"title"`
	Enum                 []any                  `json:"enum"`
	Minimum              *float64               `json:"minimum"`
	Maximum              *float64               `json:"maximum"`
	MinLength            *int                   `json:"minLength"`
	MaxLength            *int                   `json:"maxLength"`
	MinItems             *int                   `json:"minItems"`
	Properties           map[string]*jsonSchema `json:"properties"`
	Items                *jsonSchema            `json:"items"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
	Definitions          map[string]*jsonSchema `json:"definitions"`
}

// formatSchema is v1alpha1.Schema, decoded once.
var formatSchema = sync.OnceValues(func() (*jsonSchema, error) {
	s := &jsonSchema{}
	if err := json.Unmarshal(v1alpha1.Schema, s); err != nil {
		return nil, fmt.Errorf("the embedded schema of the format does not decode: %w", err)
	}
	return s, nil
})

// checkSchema checks tree, the decoded document, against the format's
// schema: enums, minimums and maximums, lengths and item counts. It returns
// the problems instead of recording them: addSchemaErrors records them
// after validate.go, which words some of the same with more to say.
func (d *decoder) checkSchema(tree any) Errors {
	root, err := formatSchema()
	if err != nil {
		return Errors{{File: d.file, Message: "internal error: " + err.Error()}}
	}
	before := len(d.errs)
	d.checkValue(root, root, tree, "", "")
	found := slices.Clone(d.errs[before:])
	d.errs = d.errs[:before]
	return found
}

// addSchemaErrors records each schema problem of a field validate.go found
// nothing wrong with.
func (d *decoder) addSchemaErrors(es Errors) {
	for _, e := range es {
		if !slices.ContainsFunc(d.errs, func(x *Error) bool { return x.Field == e.Field }) {
			d.errs = append(d.errs, e)
		}
	}
}

// checkValue checks v at path against s; noun is what an enum problem
// calls the value (its field, or "<list> item").
func (d *decoder) checkValue(root, s *jsonSchema, v any, path, noun string) {
	if s == nil {
		return
	}
	if ref, ok := strings.CutPrefix(s.Ref, "#/definitions/"); ok {
		s = root.Definitions[ref]
		if s == nil {
			return
		}
	}
	at := func(format string, args ...any) { d.errorf(d.node(path), path, format, args...) }
	if s.Title != "" {
		noun = s.Title
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return fieldpath.SameJSON(e, v) }) {
		want := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			want[i] = fmt.Sprint(e)
		}
		at("unknown %s %s: must be %s", noun, describeJSON(v), oneOf(want))
	}
	if n, ok := number(v); ok {
		t := n
		if s.Minimum != nil && t < *s.Minimum {
			if *s.Minimum == 0 {
				at("must not be negative, found %v", t)
			} else {
				at("must be at least %v, found %v", *s.Minimum, t)
			}
		}
		if s.Maximum != nil && t > *s.Maximum {
			at("must be at most %v, found %v", *s.Maximum, t)
		}
	}
	switch t := v.(type) {
	case string:
		if n := len([]rune(t)); s.MinLength != nil && n < *s.MinLength {
			at("must be at least %d characters long, found %d", *s.MinLength, n)
		} else if s.MaxLength != nil && n > *s.MaxLength {
			at("must be at most %d characters long, found %d", *s.MaxLength, n)
		}
	case []any:
		if s.MinItems != nil && len(t) < *s.MinItems {
			if *s.MinItems == 1 {
				at("must not be empty")
			} else {
				at("needs at least %d items, found %d", *s.MinItems, len(t))
			}
		}
		for i, item := range t {
			d.checkValue(root, s.Items, item, index(path, i), fieldpath.Last(path)+" item")
		}
	case map[string]any:
		var extra *jsonSchema
		if len(s.AdditionalProperties) > 0 && s.AdditionalProperties[0] == '{' {
			extra = &jsonSchema{}
			if err := json.Unmarshal(s.AdditionalProperties, extra); err != nil {
				extra = nil
			}
		}
		for k, x := range t {
			p := s.Properties[k]
			if p == nil {
				p = extra
			}
			d.checkValue(root, p, x, join(path, k), k)
		}
	}
}

// describeJSON quotes a decoded value for a message.
func describeJSON(v any) string {
	switch t := v.(type) {
	case string:
		return quote(t)
	case float64:
		if t == math.Trunc(t) {
			return fmt.Sprintf("%d", int64(t))
		}
	}
	return fmt.Sprint(v)
}

// number is a decoded number (int64, uint64 or float64) as a float64.
func number(v any) (float64, bool) {
	switch t := v.(type) {
	case int64:
		return float64(t), true
	case uint64:
		return float64(t), true
	case float64:
		return t, true
	}
	return 0, false
}
