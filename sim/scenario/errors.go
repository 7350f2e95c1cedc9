package scenario

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem at a place in a file.
type Error struct {
	// File is the path of the file, as given to the loader (cleaned).
	File string
	// Line and Column are 1-based; zero when the problem has no position
	// (the file cannot be read, or the YAML parser did not say where).
	Line, Column int
	// Field is the path of the field the problem is at, for example
	// spec.steps[2].actor; empty for problems with the file as a whole.
	Field string
	// Message says what is wrong, lower-case, without a trailing period.
	Message string
	// Placeholder: what is wrong is a placeholder simctl import left
	// (v1alpha1.Placeholder), to be filled in.
	Placeholder bool
}

// Error formats e as file:line:column: field: message. Field is omitted when
// empty, column when zero, line and column when the line is zero.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, "%d:", e.Column)
		}
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Errors is a list of problems; its Error() joins them with newlines.
// The loader returns it as *Errors, never empty.
type Errors []*Error

// Error returns one line per problem.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sortByPosition orders the problems of one file by line and column,
// keeping the order in which they were found for equal positions.
func sortByPosition(es Errors) {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
}

// asError returns es as an error: nil when empty, *Errors otherwise.
func asError(es Errors) error {
	if len(es) == 0 {
		return nil
	}
	return &es
}

// YAMLError turns an error of go.yaml.in/yaml/v4 about data, the content of
// file, into an Error at the line it names, corrected as the loader corrects
// it (the parser counts some lines from 0), for other readers of YAML files
// that report problems the way the loader does.
func YAMLError(file string, data []byte, err error) *Error {
	d := newDecoder(file)
	d.yamlError(err, data)
	return d.errs[0]
}
