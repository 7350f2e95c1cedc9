package scenario

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// An indentation mistake makes the parser say "did not find expected key"
// (or '-' indicator), which names no field, and the position it gives may
// be where the broken block begins, far above the mistake. misindented
// finds the line instead: the first one indented to no level of the blocks
// around it, and names its field.

// blockScalar matches a line whose value is a literal or folded block
// scalar (description: |), whose lines are text, not structure.
var blockScalar = regexp.MustCompile(`(^|:\s|-\s)[|>][-+0-9]*\s*(#.*)?$`)

// misindented returns the first line of data indented between two levels
// of the blocks above it (more than a key, less than that key's fields,
// or between two such), with a message naming its field and the levels
// it misses; ok is false when every line lines up.
func misindented(data []byte) (line, col int, msg string, ok bool) {
	type level struct {
		indent int
		key    string
	}
	levels := []level{{0, ""}}
	opens := false // the line before opens a block: its children go deeper
	scalarAt := -1 // the indentation of a block scalar's key, while in its text
	for i, raw := range bytes.Split(data, []byte("\n")) {
		text := strings.TrimRight(string(raw), " \t\r")
		content := strings.TrimLeft(text, " ")
		indent := len(text) - len(content)
		if content == "" || strings.HasPrefix(content, "#") {
			continue
		}
		if scalarAt >= 0 {
			if indent > scalarAt {
				continue
			}
			scalarAt = -1
		}
		if content == "---" || strings.HasPrefix(content, "--- ") || content == "..." {
			levels, opens = []level{{0, ""}}, false
			continue
		}
		var popped *level
		for len(levels) > 1 && levels[len(levels)-1].indent > indent {
			popped = &levels[len(levels)-1]
			levels = levels[:len(levels)-1]
		}
		top := levels[len(levels)-1]
		switch {
		case top.indent < indent && popped != nil:
			spaces := "spaces"
			if indent == 1 {
				spaces = "space"
			}
			return i + 1, indent + 1, fmt.Sprintf("%s is indented %d %s, which lines up with no field above it: %s is at %d, and its fields (such as %s) at %d", quote(keyOf(content)), indent, spaces, quoteKey(top.key), top.indent, quote(popped.key), popped.indent), true
		case top.indent < indent && opens:
			levels = append(levels, level{indent, ""})
		case top.indent < indent:
			continue // the continuation of a plain scalar of the line before
		}
		key := keyOf(content)
		levels[len(levels)-1].key = key
		// A sequence item's fields line up with what follows its dash.
		item := content
		for strings.HasPrefix(item, "- ") || item == "-" {
			rest := strings.TrimLeft(strings.TrimPrefix(item, "-"), " ")
			at := indent + len(content) - len(rest)
			if rest == "" {
				break
			}
			levels = append(levels, level{at, keyOf(rest)})
			item = rest
		}
		opens = strings.HasSuffix(item, ":") || item == "-" || strings.HasSuffix(item, "- ")
		if blockScalar.MatchString(item) {
			scalarAt = levels[len(levels)-1].indent
		}
	}
	return 0, 0, "", false
}

// keyOf is the key a line of a mapping begins with, or the line itself.
func keyOf(content string) string {
	content = strings.TrimPrefix(content, "- ")
	if k, _, found := strings.Cut(content, ":"); found {
		return strings.Trim(k, `"' `)
	}
	return content
}

// quoteKey quotes a key, or says it is the top level.
func quoteKey(k string) string {
	if k == "" {
		return "the top level"
	}
	return quote(k)
}
