package app

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/scenario"
)

func newLintCommand(streams Streams) *cobra.Command {
	var fixtures string
	cmd := &cobra.Command{
		Use:   "lint PATH...",
		Short: "Check scenario files without starting a cluster",
		Long: `lint loads every scenario file named or found under PATH (*.yaml and *.yml,
recursively, skipping scale/ directories unless one is named) exactly as
'simctl run' would, and prints every problem it finds
to standard error, one per line:

  FILE:LINE:COLUMN: FIELD: MESSAGE

It reports YAML syntax errors, unknown fields and fields of the wrong type,
missing required fields, the wrong apiVersion or kind, scenario names that are
not unique, unknown actors, node profiles and fixtures, update.from naming a
step that is not an earlier one, steps that combine fields they cannot (two
writes, force without apply, expectError without a write), and invalid patch
bodies and regular expressions. A file lint accepts, run accepts, and the other
way round, on a machine that has built what the file runs.

It warns, without failing, about an upgrade step to a Trainer release whose
managers this checkout has not built ('make assets' builds them; run refuses
the file until then), and about the optional editor schema line:

  # yaml-language-server: $schema=<relative path to sim/apis/v1alpha1/scenario.schema.json>

With that line (first in the file, by convention), editors that use the YAML
language server (VS Code's YAML extension, for one) complete and check fields
while you type. lint warns when a file has none, or when it names a file that
is not there; a URL is accepted as it is. Warnings are printed like problems:

  FILE:LINE:COLUMN: warning: MESSAGE

The field reference is docs/scenario-reference.md.

lint never starts a cluster, so it cannot tell whether the server will accept
an object: that is what 'simctl run' finds out.

Exit codes: 0 every file is valid (warnings or not), 2 a problem was found or
no file was given.`,
		Example: `  # every scenario of the repository
  simctl lint scenarios/

  # one file, with setup paths resolved in another fixtures directory
  simctl lint my-scenario.yaml --fixtures ../trainersim/fixtures

  # in CI, before the slow run
  simctl lint scenarios/ && simctl run scenarios/ --report-dir reports/out`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return withCode(ExitUsage, errors.New("lint needs at least one PATH: a scenario file or a directory of them"))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return lint(streams, args, fixtures)
		},
	}
	cmd.Flags().StringVar(&fixtures, "fixtures", "", "directory that setup[].path is relative to (default: the nearest fixtures/ above the working directory)")
	return cmd
}

// lint reports the problems of the scenario files under paths, and warns
// about their editor schema lines.
func lint(streams Streams, paths []string, fixturesDir string) error {
	// LoadPaths finds the same files and reports the paths it cannot read;
	// FindFiles is only needed here for the list, to check schema lines.
	found, _ := scenario.FindFiles(paths)
	files, err := scenario.LoadPaths(paths, scenario.Options{FixturesDir: fixturesDir, TrainerBuilt: sim.TrainerBuilt, UnbuiltWarns: true})
	var problems []*scenario.Error
	var errs *scenario.Errors
	switch {
	case errors.As(err, &errs):
		problems = append(problems, *errs...)
	case err != nil:
		return withCode(ExitUsage, err)
	}
	var warnings []*scenario.Error
	for _, path := range found {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // reported by LoadPaths
		}
		if w := scenario.CheckSchemaLine(path, data); w != nil {
			warnings = append(warnings, w)
		}
	}
	for _, f := range files {
		warnings = append(warnings, f.Warnings...)
	}
	order := map[string]int{}
	for i, path := range found {
		order[path] = i + 1 // paths that could not be found sort first, as 0
	}
	type line struct {
		*scenario.Error
		label string // "warning: ", "note: ", or none for a problem
	}
	var lines []line
	for _, p := range problems {
		lines = append(lines, line{p, ""})
	}
	for _, w := range warnings {
		lines = append(lines, line{w, "warning: "})
	}
	for _, f := range files {
		for _, n := range f.Notes {
			lines = append(lines, line{n, "note: "})
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int {
		return cmp.Or(
			cmp.Compare(order[a.File], order[b.File]),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
		)
	})
	for _, l := range lines {
		e := *l.Error
		if l.label != "" && e.Field != "" {
			e.Message, e.Field = e.Field+": "+e.Message, ""
		}
		e.Message = l.label + e.Message
		fmt.Fprintln(streams.Err, e.Error())
	}
	var warned string
	if len(warnings) > 0 {
		warned = "; " + plural(len(warnings), "warning")
	}
	if notes := len(lines) - len(problems) - len(warnings); notes > 0 {
		warned += "; " + plural(notes, "note")
	}
	if len(problems) == 0 {
		fmt.Fprintf(streams.Out, "%s in %s: ok%s\n", plural(len(files), "scenario"), plural(len(found), "file"), warned)
		return nil
	}
	summary := fmt.Sprintf("%s in %s", plural(len(problems), "problem"), plural(len(found), "file"))
	fmt.Fprintln(streams.Out, summary+warned)
	return withCode(ExitUsage, fmt.Errorf("lint found %s", summary))
}

// plural formats a count of things: "1 file", "2 files".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
