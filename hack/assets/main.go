// Command assets builds the binaries a cluster runs into a bin directory:
// `make assets` and `make run` run it on the checkout's bin/. It is
// `simctl assets` (sim/assetbuild) without the rest of simctl, which takes
// longer to compile than a cold machine should wait before its first
// build starts.
//
//	go run ./hack/assets --dir bin           # what the corpus needs
//	go run ./hack/assets --dir bin --all     # and the other releases, the hollow kubelet
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/trainersim/trainersim/sim/assetbuild"
)

func main() {
	var o assetbuild.Options
	var trainers, only string
	flag.StringVar(&o.Dir, "dir", "", "the bin directory to build into")
	flag.BoolVar(&o.All, "all", false, "also build the other Trainer releases, their JobSets and the hollow kubelet")
	flag.StringVar(&trainers, "trainer", "", "also build these Trainer releases (comma-separated)")
	flag.StringVar(&only, "only", "", "build only these builds (comma-separated)")
	flag.BoolVar(&o.List, "list", false, "print each build and whether --dir has it")
	flag.BoolVar(&o.Verbose, "v", false, "print what go prints")
	flag.StringVar(&o.Modules, "modules", "hack", "the checkout's hack/, whose modules the builds run in")
	flag.Parse()
	o.Trainers, o.Only = split(trainers), split(only)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := assetbuild.BuildAll(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "assets:", err)
		if errors.As(err, new(assetbuild.UsageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
