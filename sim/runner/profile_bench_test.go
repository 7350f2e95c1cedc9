package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/kubernetes"

	"github.com/trainersim/trainersim/sim/providers/envtest"
)

// profileChunk is the length of each CPU profile the API server is asked
// for: the profiles of a run are consecutive chunks, merged.
const profileChunk = 5 * time.Second

// cpuArea is a part of the API server's work, found by the functions on a
// sample's stack.
type cpuArea struct {
	name  string
	funcs []string // substrings of function names
}

// apiServerAreas attribute each sample to the first area with a function
// on its stack: a watch's encoding counts as the watch, a webhook call's
// TLS as the webhook.
var apiServerAreas = []cpuArea{
	{"garbage collection (background)", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
	{"audit log", []string{"k8s.io/apiserver/pkg/audit.", "k8s.io/apiserver/plugin/pkg/audit"}},
	{"admission webhooks (calls over TLS)", []string{"k8s.io/apiserver/pkg/admission/plugin/webhook"}},
	{"watches (events to each watcher)", []string{"cacher.(*Cacher).dispatchEvent", "cacher.(*cacheWatcher)", "cacher.(*Cacher).processEvent", "handlers.(*WatchServer)", "handlers.serveWatch"}},
	{"watch cache (taking in etcd's events)", []string{"cacher.(*watchCache)", "cacher.(*Cacher).startCaching", "etcd3.(*watchChan)"}},
	{"server-side apply and managedFields", []string{"sigs.k8s.io/structured-merge-diff", "k8s.io/apimachinery/pkg/util/managedfields", "handlers/fieldmanager"}},
	{"CEL (CRD rules, admission policies)", []string{"github.com/google/cel-go", "k8s.io/apiserver/pkg/cel", "apiextensions-apiserver/pkg/apiserver/schema/cel", "k8s.io/apiserver/pkg/admission/plugin/policy"}},
	{"CRD schemas (validation, defaulting, pruning)", []string{"k8s.io/apiextensions-apiserver/pkg/apiserver/schema", "k8s.io/kube-openapi/pkg/validation"}},
	{"updates and patches (the rest)", []string{"registry.(*Store).Update", "handlers.(*patcher)", "handlers.UpdateResource"}},
	{"creates (the rest)", []string{"registry.(*Store).Create", "handlers.createHandler"}},
	{"deletes (the rest)", []string{"registry.(*Store).Delete", "handlers.DeleteResource", "handlers.DeleteCollection"}},
	{"reads (gets and lists)", []string{"registry.(*Store).Get", "registry.(*Store).List", "handlers.GetResource", "handlers.ListResource"}},
	{"request handling (filters, auth, flow control)", []string{"k8s.io/apiserver/pkg/endpoints", "k8s.io/apiserver/pkg/server/filters", "k8s.io/apiserver/pkg/server."}},
	{"TLS and HTTP/2 (connections)", []string{"crypto/tls", "golang.org/x/net/http2", "net/http."}},
	{"controllers of the API server", []string{"k8s.io/kubernetes/pkg/controlplane", "k8s.io/apiextensions-apiserver/pkg/controller", "k8s.io/kube-aggregator", "k8s.io/kubernetes/pkg/controller"}},
}

// simctlAreas are the parts of this process's work (simctl's, with the
// in-process Trainer and JobSet), attributed as apiServerAreas are.
var simctlAreas = []cpuArea{
	{"garbage collection (background)", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
	{"Trainer webhooks", []string{"github.com/kubeflow/trainer/v2/pkg/webhook"}},
	{"Trainer controllers", []string{"github.com/kubeflow/trainer/v2/"}},
	{"JobSet webhooks", []string{"sigs.k8s.io/jobset/pkg/webhooks"}},
	{"JobSet controllers", []string{"sigs.k8s.io/jobset/"}},
	{"webhook serving (admission requests decoded, answers encoded)", []string{"sigs.k8s.io/controller-runtime/pkg/webhook"}},
	{"the runner's watches", []string{"trainersim/sim/runner.(*Watches)", "trainersim/sim/runner.(*watcher)"}},
	{"the runner and the harness", []string{"github.com/trainersim/trainersim/"}},
	{"informers and clients (decode, caches)", []string{"k8s.io/client-go/", "sigs.k8s.io/controller-runtime/pkg/cache", "sigs.k8s.io/controller-runtime/pkg/client"}},
	{"TLS and HTTP/2 (connections)", []string{"crypto/tls", "golang.org/x/net/http2", "net/http."}},
}

const otherArea = "other"

// profileAPIServer asks the API server for consecutive CPU profiles of
// profileChunk until stop is closed; collected returns them merged, once
// the chunk under way when stop closed is done.
func profileAPIServer(b *testing.B, env *envtest.Environment, stop <-chan struct{}) (collected func() *profile.Profile) {
	b.Helper()
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		b.Fatal(err)
	}
	var chunks []*profile.Profile
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for {
			raw, err := cs.RESTClient().Get().AbsPath("/debug/pprof/profile").
				Param("seconds", fmt.Sprint(int(profileChunk.Seconds()))).DoRaw(context.Background())
			if err != nil {
				errs <- fmt.Errorf("failed to read the API server's CPU profile: %w", err)
				return
			}
			p, err := profile.Parse(bytes.NewReader(raw))
			if err != nil {
				errs <- fmt.Errorf("failed to parse the API server's CPU profile: %w", err)
				return
			}
			chunks = append(chunks, p)
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	return func() *profile.Profile {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		merged, err := profile.Merge(chunks)
		if err != nil {
			b.Fatal(err)
		}
		return merged
	}
}

// cpuByArea returns the profile's CPU seconds by area (and otherArea),
// and its total.
func cpuByArea(p *profile.Profile, areas []cpuArea) (map[string]float64, float64) {
	idx := cpuSampleIndex(p)
	out, total := map[string]float64{}, 0.0
	for _, s := range p.Sample {
		secs := float64(s.Value[idx]) / 1e9
		total += secs
		out[areaOf(s, areas)] += secs
	}
	return out, total
}

// cpuSampleIndex is the index of the cpu/nanoseconds value of a CPU
// profile's samples.
func cpuSampleIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			return i
		}
	}
	return len(p.SampleType) - 1
}

func areaOf(s *profile.Sample, areas []cpuArea) string {
	for _, area := range areas {
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				for _, f := range area.funcs {
					if strings.Contains(line.Function.Name, f) {
						return area.name
					}
				}
			}
		}
	}
	return otherArea
}

// BenchmarkCorpusProfile runs the corpus as BenchmarkCorpus does while it
// takes a CPU profile of the API server (its /debug/pprof, in consecutive
// chunks of profileChunk) and of this process (simctl's work: the
// in-process Trainer and JobSet, the runner), and prints where each one's
// CPU went, per scenario run, by area of its work. The profiles are
// written for `go tool pprof`. It is a run of its own, so that the
// profilers' cost is not in BenchmarkCorpus's figures.
func BenchmarkCorpusProfile(b *testing.B) {
	files := loadCorpus(b)
	var apiServer, self *profile.Profile
	runs := 0
	for b.Loop() {
		env, stopCluster := startCluster(b, files)
		stop := make(chan struct{})
		collected := profileAPIServer(b, env, stop)
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			b.Fatal(err)
		}
		r := &Runner{Cluster: env, Discarded: true}
		results, complete := r.Run(context.Background(), files)
		pprof.StopCPUProfile()
		close(stop)
		apiServer = collected()
		stopCluster()
		if !complete {
			b.Fatal("the corpus run did not finish")
		}
		runs = len(results)
		var err error
		if self, err = profile.Parse(&buf); err != nil {
			b.Fatal(err)
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	for _, p := range []struct {
		name, file string
		prof       *profile.Profile
		areas      []cpuArea
	}{
		{"the API server's", "trainersim-apiserver-cpu.pprof", apiServer, apiServerAreas},
		{"simctl's (the in-process Trainer and JobSet, the runner)", "trainersim-simctl-cpu.pprof", self, simctlAreas},
	} {
		out := filepath.Join(os.TempDir(), p.file)
		writeProfile(b, p.prof, out)
		byArea, total := cpuByArea(p.prof, p.areas)
		fmt.Fprintf(w, "\n%s CPU profile over one corpus run (%d scenario runs, the cluster start excluded): %.1f s, %.3f s per scenario run; written to %s\n", p.name, runs, total, total/float64(runs), out)
		fmt.Fprintln(w, "by area of its work (each sample in the first area on its stack), per scenario run:")
		for _, name := range sortedByValue(byArea) {
			fmt.Fprintf(w, "  %s\t%.3f s\t%.0f%%\n", name, byArea[name]/float64(runs), 100*byArea[name]/total)
		}
	}
	b.ReportMetric(0, "ns/op")
	_ = w.Flush()
}

func writeProfile(b *testing.B, p *profile.Profile, path string) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
