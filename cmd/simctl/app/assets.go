package app

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/sim/assetbuild"
	"github.com/trainersim/trainersim/sim/releases"
)

func newAssetsCommand(streams Streams) *cobra.Command {
	var o assetbuild.Options
	cmd := &cobra.Command{
		Use:   "assets [--all] [--trainer VERSION]... [--dir DIR]",
		Short: "Build the control plane, KWOK, Kueue and the other Trainer releases from source, once",
		Long: `assets builds the binaries a cluster runs, with the go command, from the Go
module proxy: kube-apiserver, kube-controller-manager and kube-scheduler
v` + releases.KubernetesVersion + ` with etcd, KWOK, Kueue ` + releases.KueueVersion + ` and the Trainer releases the
corpus's upgrade scenarios name (` + strings.Join(assetbuild.CorpusTrainers, ", ") + `) with the JobSet releases they pin
(what the corpus needs), and with --all the other Trainer releases that run as
processes (of ` + strings.Join(assetbuild.OtherTrainers(), ", ") + `) with theirs, and the hollow kubelet. The versions are
the ones this simctl was built with: simctl carries the go.mod and go.sum of
each build. The Trainer ` + releases.TrainerVersion + ` runs in simctl's own process and needs no
build.

The binaries go to --dir, by default trainersim/bin in the user's cache
directory ($XDG_CACHE_HOME, else ~/.cache), where every simctl command looks
after bin/ of a trainersim checkout: a simctl installed with 'go install'
runs scenarios from any directory once assets has built them. Each build
prints a line with the time so far and an estimate of what is left. A build
whose go.mod, flags and binaries have not changed since it last ran does not
run again: a second call builds nothing. In a checkout, 'make assets' does
the same into bin/.

On the slower of the project's 2-core machines, with empty Go caches, the
corpus's builds take about 28 minutes, --all about 32 (most of it downloading
and compiling Kubernetes and Kueue); with a warm Go build cache, a minute or
two.

Exit codes: 0 built (or nothing to build), 1 a build failed (go's output
says why), 2 usage.`,
		Example: `  go install github.com/trainersim/trainersim/cmd/simctl@latest
  simctl assets                  # what the corpus needs
  simctl assets --all            # and the other Trainer releases, the hollow kubelet
  simctl assets --trainer v2.2.1 # and that release
  simctl assets --list           # what it would build, and what is built`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := assetbuild.BuildAll(cmd.Context(), o, streams.Out, streams.Err)
			var usage assetbuild.UsageError
			if errors.As(err, &usage) {
				return withCode(ExitUsage, err)
			}
			return withCode(ExitFailed, err)
		},
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "the bin directory to build into (default: trainersim/bin in the user's cache directory;\na checkout's bin/: what make assets gives)")
	cmd.Flags().BoolVar(&o.All, "all", false, "also build every Trainer release that runs as processes, their JobSets, and the hollow kubelet")
	cmd.Flags().StringSliceVar(&o.Trainers, "trainer", nil, "also build this Trainer release and its JobSet (repeatable): "+strings.Join(assetbuild.OtherTrainers(), ", "))
	cmd.Flags().StringSliceVar(&o.Only, "only", nil, "build only these builds, by the names --list prints (repeatable)")
	cmd.Flags().BoolVar(&o.List, "list", false, "print each build, whether --dir has it, and how long it takes cold; build nothing")
	cmd.Flags().BoolVarP(&o.Verbose, "verbose", "v", false, "print what go prints as it builds (otherwise only a failed build's)")
	cmd.Flags().StringVar(&o.Go, "go", "", "the go command to build with (default: $GO, else go on PATH)")
	return cmd
}
