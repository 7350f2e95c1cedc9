package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/internal/checkout"
)

// File is one loaded scenario file.
type File struct {
	// Path is the file's path as given (cleaned).
	Path string
	// Scenario is the decoded, validated scenario.
	Scenario *v1alpha1.Scenario
	// Notes say what the file leaves implicit and how it is taken (a
	// Trainer range its fields imply), with file:line:col like errors.
	Notes Errors
	// Warnings are what this machine lacks to run the file (a release
	// not built, with Options.UnbuiltWarns): lint warns, run refuses.
	Warnings Errors
	// FixturesDir is the directory its setup[].path entries were found
	// in; empty when it names none.
	FixturesDir string
}

// Options configure loading.
type Options struct {
	// FixturesDir is where setup[].path is resolved. Empty: the nearest
	// fixtures/ directory found by walking up from the working directory
	// (FindFixturesDir).
	FixturesDir string
	// TrainerBuilt, when set, says whether a Trainer release's managers
	// are built where a run would look for them: nil, or why not (naming
	// the make target that builds them). An upgrade step to a release it
	// refuses is a problem at the step's to (a warning with UnbuiltWarns).
	// Unset: releases are checked by name only.
	TrainerBuilt func(version string) error
	// UnbuiltWarns makes a release TrainerBuilt refuses a warning of the
	// file (File.Warnings) rather than a problem: what the machine lacks,
	// not what the file gets wrong. lint sets it, so that it passes on a
	// clone before 'make assets'; run does not.
	UnbuiltWarns bool
}

// LoadPaths loads every *.yaml / *.yml file named or found (recursively,
// sorted) under paths; a file named explicitly is loaded whatever its
// extension. It reports ALL problems, not just the first, as an *Errors,
// and also requires metadata.name to be unique across the files.
//
// The files returned are those that loaded without a problem, in the order
// FindFiles returns them, so a caller can print every error and continue
// with the rest.
func LoadPaths(paths []string, opts Options) ([]*File, error) {
	found, err := FindFiles(paths)
	var errs Errors
	if notFound := (*Errors)(nil); errors.As(err, &notFound) {
		errs = append(errs, *notFound...)
	}
	fx := &fixtures{dir: opts.FixturesDir}
	type named struct {
		file string
		line int
	}
	names := map[string]named{}
	var files []*File
	for _, path := range found {
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, readError(path, err))
			continue
		}
		f, d, sc := load(path, data, fx, opts)
		// Names are compared whenever the file decoded, so that a
		// duplicate is reported along with the file's other problems.
		if sc != nil && sc.Metadata.Name != "" {
			name := sc.Metadata.Name
			line := 0
			n := d.node("metadata.name")
			if n != nil {
				line = n.Line
			}
			if prev, dup := names[name]; dup {
				d.errorf(n, "metadata.name", "duplicate scenario name %s: %s:%d has it too", quote(name), prev.file, prev.line)
				sortByPosition(d.errs)
				f = nil
			} else {
				names[name] = named{cleanPath(path), line}
			}
		}
		errs = append(errs, d.errs...)
		if f != nil {
			files = append(files, f)
		}
	}
	return files, asError(errs)
}

// LoadFile loads one file.
func LoadFile(path string, opts Options) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, asError(Errors{readError(path, err)})
	}
	return Load(path, data, opts)
}

// Load decodes data as if read from path (used by the fuzz target and
// tests). The error, if any, is an *Errors.
func Load(path string, data []byte, opts Options) (*File, error) {
	f, d, _ := load(path, data, &fixtures{dir: opts.FixturesDir}, opts)
	return f, asError(d.errs)
}

// load runs every stage on one file. It returns the file only when there is
// no problem, the decoder with the problems and positions either way, and
// the decoded scenario whenever the structure was sound enough to decode,
// for the checks across files.
func load(path string, data []byte, fx *fixtures, opts Options) (_ *File, _ *decoder, decoded *v1alpha1.Scenario) {
	path = cleanPath(path)
	d := newDecoder(path)
	defer func() {
		d.errs = dedupe(d.errs)
		sortByPosition(d.errs)
	}()
	root := d.parse(data)
	if root == nil {
		return nil, d, nil
	}
	t := reflect.TypeFor[v1alpha1.Scenario]()
	d.walk(root, t, "")
	if len(d.errs) > 0 {
		return nil, d, nil
	}
	tree := d.convert(root, "")
	if len(d.errs) > 0 {
		return nil, d, nil
	}
	schemaErrs := d.checkSchema(tree)
	var sc v1alpha1.Scenario
	if err := decodeJSON(tree, &sc); err != nil {
		// The walk accepts only what decodes; this is a bug in it.
		d.errorf(root, "", "internal error: failed to decode the checked document: %v", err)
		return nil, d, nil
	}
	(&validator{d: d, sc: &sc, fixtures: fx, built: opts.TrainerBuilt, unbuiltWarns: opts.UnbuiltWarns}).validate()
	d.addSchemaErrors(schemaErrs)
	d.placeholders(tree)
	if len(d.errs) > 0 {
		return nil, d, &sc
	}
	f := &File{Path: path, Scenario: &sc, Notes: d.notes, Warnings: d.warnings}
	if fx.resolved && fx.err == nil {
		f.FixturesDir = fx.dir
	}
	return f, d, &sc
}

func decodeJSON(tree any, into any) error {
	b, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// dedupe drops a problem reported twice at the same place, which happens
// when an anchor with a problem is merged (<<) in several places.
func dedupe(es Errors) Errors {
	type key struct {
		line, col int
		msg       string
	}
	seen := map[key]bool{}
	out := es[:0]
	for _, e := range es {
		k := key{e.Line, e.Column, e.Message}
		if e.Line > 0 && seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out
}

func cleanPath(path string) string {
	if path == "" {
		return "<input>"
	}
	return filepath.Clean(path)
}

func readError(path string, err error) *Error {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	return &Error{File: cleanPath(path), Message: "failed to read file: " + msg}
}

// ScaleDir is the name of the directories a walk skips: the fleet-sized
// scenarios of scenarios/scale, which take minutes and run when named
// (make bench-scale), not with the corpus.
const ScaleDir = "scale"

// FindFiles returns the files LoadPaths loads for paths: each path that is a
// file, and every *.yaml and *.yml file under each path that is a directory
// (recursively, sorted, skipping directories whose names start with a dot
// and, below the path, directories named ScaleDir).
// Paths are cleaned; a file named twice is returned once. A path that does
// not exist, and a directory without scenario files, are problems, returned
// as *Errors along with the files found elsewhere.
func FindFiles(paths []string) ([]string, error) {
	var (
		out  []string
		errs Errors
	)
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		p = cleanPath(p)
		info, err := os.Stat(p)
		if err != nil {
			errs = append(errs, readError(p, err))
			continue
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		var under []string
		err = filepath.WalkDir(p, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if path != p && (strings.HasPrefix(e.Name(), ".") || e.Name() == ScaleDir) {
					return filepath.SkipDir
				}
				return nil
			}
			if ext := filepath.Ext(path); ext == ".yaml" || ext == ".yml" {
				under = append(under, path)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, readError(p, err))
			continue
		}
		if len(under) == 0 {
			errs = append(errs, &Error{File: p, Message: "no *.yaml or *.yml files in this directory"})
			continue
		}
		slices.Sort(under)
		for _, f := range under {
			add(f)
		}
	}
	return out, asError(errs)
}

// FindFixturesDir returns the nearest directory named fixtures in the
// working directory or one of its parents, or else in the executable's
// directory or one of its parents (bin/simctl run from outside the
// checkout), as an absolute path.
func FindFixturesDir() (string, error) {
	dirs := checkout.Upward()
	for _, dir := range dirs {
		if info, err := os.Stat(filepath.Join(dir, "fixtures")); err == nil && info.IsDir() {
			return filepath.Abs(filepath.Join(dir, "fixtures"))
		}
	}
	return "", fmt.Errorf("no fixtures directory in the working directory, the executable's or any of their parents (looked in %s): pass --fixtures", strings.Join(dirs, ", "))
}

// fixtures resolves setup[].path, finding the directory once per load.
type fixtures struct {
	dir      string
	err      error
	resolved bool
}

// find returns the fixture file for a setup path, or why there is none.
func (fx *fixtures) find(path string) error {
	if !fx.resolved {
		fx.resolved = true
		if fx.dir == "" {
			fx.dir, fx.err = FindFixturesDir()
		}
	}
	if fx.err != nil {
		return fmt.Errorf("cannot resolve fixture %s: %w", quote(path), fx.err)
	}
	if !filepath.IsLocal(path) {
		return fmt.Errorf("fixture path %s must be relative to the fixtures directory %s and stay inside it", quote(path), fx.dir)
	}
	info, err := os.Stat(filepath.Join(fx.dir, path))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("unknown fixture %s: no such file in %s", quote(path), fx.dir)
	case err != nil:
		return fmt.Errorf("cannot read fixture %s: %w", quote(path), err)
	case info.IsDir():
		return fmt.Errorf("fixture %s is a directory in %s, not a file", quote(path), fx.dir)
	}
	return nil
}
