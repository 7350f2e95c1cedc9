package scenario

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

const (
	// schemaComment is the editor schema line trainersim writes: the
	// yaml-language-server (VS Code's YAML extension and others) validates
	// the file against the schema it names.
	schemaComment = "# yaml-language-server: $schema="
	// schemaFile is the name of the generated schema.
	schemaFile = "scenario.schema.json"
	// schemaRepoPath is where the schema is in a trainersim checkout.
	schemaRepoPath = "sim/apis/v1alpha1/" + schemaFile
)

var (
	// modeline matches a comment line the yaml-language-server reads as its
	// modeline: "# yaml-language-server: ...", on a line of its own,
	// anywhere in the file (its isModeline).
	modeline = regexp.MustCompile(`^\s*#\s+yaml-language-server\s*:`)
	// schemaAttr is the modeline's $schema attribute ("$schema=URL", or
	// "$schema: URL" for newer servers); the server takes the first.
	schemaAttr = regexp.MustCompile(`\$schema(?:=|:\s*)(\S+)`)
)

// CheckSchemaLine looks for the editor schema line of a scenario file,
//
//	# yaml-language-server: $schema=<path>/scenario.schema.json
//
// with which editors that use the YAML language server complete and check
// the file against the generated schema. The line is optional: what
// CheckSchemaLine returns is a warning, which simctl lint prints and never
// fails on, and Load does not look at the line at all, so that lint and run
// accept the same files.
//
// It returns nil when the line is there (on any comment line, as the
// language server reads it) and names a URL, which is not fetched, or a
// file that exists, relative to the file or absolute. Otherwise the warning
// is at the line's place (1:1 when there is none) and says which line to
// write.
func CheckSchemaLine(file string, data []byte) *Error {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	want := suggestSchemaLine(file)
	for i, raw := range bytes.Split(data, []byte("\n")) {
		line := strings.TrimRight(string(raw), "\r")
		if !modeline.MatchString(line) {
			continue
		}
		e := &Error{File: cleanPath(file), Line: i + 1, Column: 1}
		m := schemaAttr.FindStringSubmatchIndex(line)
		if m == nil {
			e.Message = fmt.Sprintf("the yaml-language-server line names no $schema, so editors do not check this file against the scenario schema: want %q", want)
			return e
		}
		target := line[m[2]:m[3]]
		e.Column = m[2] + 1
		if strings.Contains(target, "://") {
			return nil
		}
		resolved := filepath.FromSlash(target)
		if !filepath.IsAbs(resolved) {
			resolved = filepath.Join(filepath.Dir(file), resolved)
		}
		if _, err := os.Stat(resolved); err != nil {
			e.Message = fmt.Sprintf("the schema line names %s, which is not there relative to this file, so editors cannot check it: want %q", quote(target), want)
			return e
		}
		return nil
	}
	return &Error{
		File: cleanPath(file), Line: 1, Column: 1,
		Message: fmt.Sprintf("no editor schema line: with %q as the first line, editors that use the YAML language server complete and check the file", want),
	}
}

// SchemaLine returns the editor schema line for a file, with the path to
// the schema of the checkout the file is in; ok is false when it is in
// none (the line then names a placeholder).
func SchemaLine(file string) (line string, ok bool) {
	line = suggestSchemaLine(file)
	return line, !strings.Contains(line, "<path to ")
}

// suggestSchemaLine returns the schema line for file, with the path to the
// schema of the checkout file is in when there is one.
func suggestSchemaLine(file string) string {
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return schemaComment + "<path to " + schemaRepoPath + ">"
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, filepath.FromSlash(schemaRepoPath))); err == nil {
			if rel, err := filepath.Rel(dir, filepath.Join(d, filepath.FromSlash(schemaRepoPath))); err == nil {
				return schemaComment + filepath.ToSlash(rel)
			}
		}
		if filepath.Dir(d) == d {
			return schemaComment + "<path to " + schemaRepoPath + ">"
		}
	}
}
