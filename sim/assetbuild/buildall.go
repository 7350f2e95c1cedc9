package assetbuild

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/releases"
)

// Options say what BuildAll builds, and where.
type Options struct {
	// Dir is the bin directory; empty: assets.CacheDir.
	Dir string
	// All adds every build the corpus does not need; Trainers the builds
	// of these releases (and the JobSets they pin); Only, by name, builds
	// these alone.
	All      bool
	Trainers []string
	Only     []string
	// List prints each build and whether Dir has it, and builds nothing.
	List bool
	// Go is the go command; empty: $GO, else go.
	Go string
	// Verbose passes go's output on as it builds; otherwise only a failed
	// build's is.
	Verbose bool
	// Modules, when set, is a checkout's hack/, whose modules the builds
	// run in instead of simctl's copies (make assets: what the checkout
	// says, edited or not).
	Modules string
}

// UsageError is an error in Options, not in a build.
type UsageError struct{ error }

func (e UsageError) Unwrap() error { return e.error }

// OtherTrainers are the releases that run as processes, which the builds
// make.
func OtherTrainers() []string {
	var out []string
	for _, r := range releases.Trainers {
		if !r.InProcess() {
			out = append(out, r.Version)
		}
	}
	return out
}

// Select returns the builds o asks for, in Plan's order.
func Select(o Options) ([]Build, error) {
	plan := Plan()
	want := map[string]bool{}
	for _, v := range o.Trainers {
		r, err := releases.LookupTrainer(v)
		if err != nil {
			return nil, UsageError{fmt.Errorf("--trainer: %w", err)}
		}
		if !r.InProcess() { // the pinned release is compiled into simctl
			want["trainer-"+r.Version], want["jobset-"+r.JobSet] = true, true
		}
	}
	for _, n := range o.Only {
		if !slices.ContainsFunc(plan, func(b Build) bool { return b.Name == n }) {
			return nil, UsageError{fmt.Errorf("--only %s: no such build; --list names them", n)}
		}
	}
	var out []Build
	for _, b := range plan {
		if o.Modules != "" {
			b.Sources = os.DirFS(o.Modules)
		}
		if len(o.Only) > 0 && slices.Contains(o.Only, b.Name) || len(o.Only) == 0 && (o.All || b.Corpus || want[b.Name]) {
			out = append(out, b)
		}
	}
	return out, nil
}

// BuildAll runs the builds o asks for that Dir does not have as they
// build now, a progress line each on out (the time so far, which of how
// many, and an estimate of what is left), go's output of a failed build
// on errOut; with none to run it says so. A failed build ends it. While
// one build runs, the modules of those after it are downloaded
// (Build.Fetch), one build's at a time, in order.
func BuildAll(ctx context.Context, o Options, out, errOut io.Writer) error {
	dir := cmp.Or(o.Dir, assets.CacheDir())
	if dir == "" {
		return UsageError{errors.New("no --dir and no user cache directory ($XDG_CACHE_HOME or $HOME): give --dir")}
	}
	goTool := cmp.Or(o.Go, os.Getenv("GO"), "go")
	plan, err := Select(o)
	if err != nil {
		return err
	}
	if o.List {
		for _, b := range plan {
			state := "to build"
			if b.Current(dir) {
				state = "built"
			}
			fmt.Fprintf(out, "%-16s %-8s %s (about %s cold)\n", b.Name, state, b.What, about(b.Cold))
		}
		return nil
	}
	var todo []Build
	var left time.Duration
	for _, b := range plan {
		if !b.Current(dir) {
			todo = append(todo, b)
			left += b.Cold
		}
	}
	if len(todo) == 0 {
		fmt.Fprintf(out, "nothing to build: %s has the binaries of %s\n", dir, strings.Join(names(plan), ", "))
		return nil
	}
	start := time.Now()
	// While one build compiles, the next ones' modules download: the
	// one waits on the CPU, the other mostly on the network.
	fetchCtx, stopFetch := context.WithCancel(ctx)
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		for _, b := range todo[1:] {
			if err := b.Fetch(fetchCtx, goTool); err != nil && fetchCtx.Err() == nil && o.Verbose {
				fmt.Fprintln(errOut, err)
			}
		}
	}()
	defer func() { stopFetch(); <-fetched }()
	for i, b := range todo {
		fmt.Fprintf(out, "[%s, %d of %d] building %s from the Go module proxy (with empty Go caches on 2 cores about %s, %s to the last)\n",
			elapsed(time.Since(start)), i+1, len(todo), b.What, about(b.Cold), about(left))
		var goOut strings.Builder
		w := io.Writer(&goOut)
		if o.Verbose {
			w = errOut
		}
		if err := b.Run(ctx, goTool, dir, w); err != nil {
			fmt.Fprint(errOut, goOut.String())
			return err
		}
		left -= b.Cold
	}
	fmt.Fprintf(out, "[%s] built into %s: %s\n", elapsed(time.Since(start)), dir, strings.Join(names(todo), ", "))
	return nil
}

// elapsed prints d as the progress lines do: 4m05s.
func elapsed(d time.Duration) string {
	s := int(d.Seconds())
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// about prints an estimate: in seconds under a minute, else in minutes.
func about(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d.Seconds()))
	}
	return fmt.Sprintf("%d min", int(d.Round(time.Minute).Minutes()))
}

func names(builds []Build) []string {
	out := make([]string, len(builds))
	for i, b := range builds {
		out[i] = b.Name
	}
	return out
}
