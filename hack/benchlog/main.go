// Command benchlog keeps the benchmark log: make bench pipes each go test
// -bench through "benchlog record", which appends every figure, with its
// commit, time and machine, to bench/results.jsonl; make bench-report runs
// "benchlog report", which draws each target's figure over the runs into
// docs/bench/<target>.svg and prints the latest figure of each.
//
//	go test ./sim/runner/ -run '^$' -bench Corpus | benchlog record -log bench/results.jsonl
//	benchlog report -log bench/results.jsonl -out docs/bench
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchlog:", err)
		os.Exit(2)
	}
}

const usage = `usage:
  benchlog record [-log FILE]            copy go test -bench output from stdin to stdout, then append its figures to FILE
  benchlog report [-log FILE] [-out DIR] draw each target's figures into DIR/<target>.svg, print the latest`

func run(args []string, in io.Reader, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	logPath := fs.String("log", "bench/results.jsonl", "the benchmark log")
	outDir := fs.String("out", "docs/bench", "where report writes the plots")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	switch args[0] {
	case "record":
		commit, dirty := headCommit()
		n, err := record(in, out, *logPath, time.Now().UTC(), thisMachine(), commit, dirty)
		if err != nil {
			return fmt.Errorf("the figures were not logged: %w", err)
		}
		if n > 0 {
			fmt.Fprintf(out, "benchlog: %d figures appended to %s\n", n, *logPath)
		}
		return nil
	case "report":
		log, err := readLog(*logPath)
		if err != nil {
			return err
		}
		return report(log, *outDir, out)
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// report writes a plot per target into dir and prints, per target, its
// latest figure against the target.
func report(log []Record, dir string, out io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintln(out, "| target | at most | latest | runs |")
	fmt.Fprintln(out, "| --- | --- | --- | --- |")
	for _, t := range targets {
		pts := t.points(log)
		path := filepath.Join(dir, t.File+".svg")
		if err := os.WriteFile(path, []byte(t.svg(pts)), 0o644); err != nil {
			return err
		}
		latest := "not measured"
		if n := len(pts); n > 0 {
			latest = trim(pts[n-1].value)
			if pts[n-1].value > t.Max {
				latest += " (over)"
			}
		}
		fmt.Fprintf(out, "| [%s](%s) | %s %s | %s | %d |\n", t.Title, path, trim(t.Max), t.Unit, latest, len(pts))
	}
	return nil
}
