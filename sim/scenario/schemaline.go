package scenario

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

const (
	// schemaComment starts the first line of a scenario file; the
	// yaml-language-server (VS Code's YAML extension and others) validates
	// the file against the schema it names.
	schemaComment = "# yaml-language-server: $schema="
	// schemaFile is the name of the generated schema.
	schemaFile = "scenario.schema.json"
	// schemaRepoPath is where the schema is in a trainersim checkout.
	schemaRepoPath = "sim/apis/v1alpha1/" + schemaFile
)

// CheckSchemaLine checks that line 1 of a scenario file is
//
//	# yaml-language-server: $schema=<path>/scenario.schema.json
//
// so that editors validate the file against the generated schema, and, for
// a path that is not a URL, that the schema is there relative to the file.
// It returns nil when the line is right. simctl lint runs it; Load does not.
func CheckSchemaLine(file string, data []byte) *Error {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	first, _, _ := bytes.Cut(data, []byte("\n"))
	line := strings.TrimRight(string(first), "\r")
	e := &Error{File: cleanPath(file), Line: 1, Column: 1}
	want := suggestSchemaLine(file)
	target, ok := strings.CutPrefix(line, schemaComment)
	if !ok {
		e.Message = fmt.Sprintf("the first line must be %q, so that editors validate the file against the scenario schema", want)
		return e
	}
	target = strings.TrimSpace(target)
	e.Column = len(schemaComment) + 1
	if path.Base(target) != schemaFile {
		e.Message = fmt.Sprintf("the schema line names %s, not a file named %s: want %q", quote(target), schemaFile, want)
		return e
	}
	if strings.Contains(target, "://") {
		return nil
	}
	resolved := filepath.FromSlash(target)
	if !filepath.IsAbs(resolved) {
		resolved = filepath.Join(filepath.Dir(file), resolved)
	}
	if _, err := os.Stat(resolved); err != nil {
		e.Message = fmt.Sprintf("the schema line names %s, which is not there relative to this file: want %q", quote(target), want)
		return e
	}
	return nil
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
