package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/scenario"
)

func newNewCommand(streams Streams) *cobra.Command {
	var f newFlags
	cmd := &cobra.Command{
		Use:   "new NAME [--from TRAINJOB.yaml] [--with kueue] [--dir DIR]",
		Short: "Write a scenario to start from, one that lints and passes as written",
		Long: `new writes DIR/NAME.yaml (DIR: the working directory): a scenario in which one actor, the
Kubeflow SDK, creates a TrainJob, and a step expects its node Pods Running on simulated nodes
that fit it. It lints and passes as written; its comments say what to change next (a second
manager, a refused write, two writes at once). NAME is the scenario's name, a DNS label.

--from TRAINJOB.yaml takes the TrainJob to create from a file (kubectl get trainjob NAME -o yaml
gives one): its name, labels, annotations and spec are kept, what the server set is dropped.
The nodes are picked for its numNodes and the GPUs it asks per node. A TrainJob that names a
runtime of its own needs that runtime in the scenario's setup: new says so in a comment.

--with kueue runs the real Kueue: the TrainJob goes to a local queue whose flavor is the nodes'
profile, and Kueue admits it, adds its toleration of the GPU taint and resumes it. Without it,
a runtime patch of the platform's adds that toleration (GPU nodes are tainted nvidia.com/gpu).

new never overwrites a file.

Exit codes: 0 written, 2 invalid input or a file in the way.`,
		Example: `  simctl new my-first-scenario && simctl run my-first-scenario.yaml -v
  kubectl get trainjob llm -o yaml > llm.yaml && simctl new llm-repro --from llm.yaml
  simctl new queued --with kueue --dir scenarios/mine`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return withCode(ExitUsage, errors.New("new needs the scenario's NAME"))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return writeNewScenario(streams, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "a TrainJob manifest (YAML or JSON) to create instead of the default one")
	fl.StringSliceVar(&f.with, "with", nil, "components the scenario runs: kueue")
	fl.StringVar(&f.dir, "dir", ".", "the directory to write NAME.yaml into")
	return cmd
}

type newFlags struct {
	from string
	with []string
	dir  string
}

// trainJob is what new keeps of a TrainJob.
type trainJob struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   trainJobMeta   `json:"metadata"`
	Spec       map[string]any `json:"spec"`
}

type trainJobMeta struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

const defaultTrainJob = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: llm
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 1
    resourcesPerNode:
      limits:
        nvidia.com/gpu: "1"
`

func writeNewScenario(streams Streams, name string, f newFlags) error {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return withCode(ExitUsage, fmt.Errorf("invalid NAME %q: a DNS label (lowercase letters, digits and '-'): %s", name, strings.Join(msgs, "; ")))
	}
	kueue := false
	for _, c := range f.with {
		if c != "kueue" {
			return withCode(ExitUsage, fmt.Errorf("invalid --with: unknown component %q: new knows kueue", c))
		}
		kueue = true
	}
	source, data := "the default TrainJob", []byte(defaultTrainJob)
	if f.from != "" {
		var err error
		if data, err = os.ReadFile(f.from); err != nil {
			return withCode(ExitUsage, fmt.Errorf("--from: %w", err))
		}
		source = f.from
	}
	var job trainJob
	if err := yaml.Unmarshal(data, &job); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--from %s: not a TrainJob: %w", f.from, err))
	}
	if job.Kind != "TrainJob" || !strings.HasPrefix(job.APIVersion, "trainer.kubeflow.org/") || job.Metadata.Name == "" || job.Spec == nil {
		return withCode(ExitUsage, fmt.Errorf("--from %s: want a TrainJob (kind TrainJob, apiVersion trainer.kubeflow.org/..., a metadata.name and a spec), found kind %q, apiVersion %q", f.from, job.Kind, job.APIVersion))
	}
	path := filepath.Join(f.dir, name+".yaml")
	if _, err := os.Stat(path); err == nil {
		return withCode(ExitUsage, fmt.Errorf("%s exists: new never overwrites a file; give another NAME or --dir", path))
	}
	schema, ok := scenario.SchemaLine(path)
	if !ok {
		schema = "" // outside a checkout: no schema to name
	}
	text, err := newScenario(name, job, kueue, schema)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("%s: %w", source, err))
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return withCode(ExitUsage, err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return withCode(ExitUsage, err)
	}
	fmt.Fprintf(streams.Out, "wrote %s (from %s)\nnext: simctl lint %s && simctl run %s -v\n", path, source, path, path)
	return nil
}

// nodesFor picks the profile whose GPUs fit a node's request: the
// smallest that does.
func nodesFor(gpus int64) (string, error) {
	if gpus == 0 {
		return "cpu", nil
	}
	best, bestGPUs := "", int64(0)
	for _, p := range fakegpu.Profiles() {
		if n := p.GPUs(); n >= gpus && (best == "" || n < bestGPUs) {
			best, bestGPUs = p.Name, n
		}
	}
	if best == "" {
		return "", fmt.Errorf("no node profile has %d GPUs per node (simctl profiles lists them)", gpus)
	}
	return best, nil
}

// newScenario writes the scenario's text.
func newScenario(name string, job trainJob, kueue bool, schema string) (string, error) {
	trainer, _ := job.Spec["trainer"].(map[string]any)
	numNodes := int64(1)
	if n, ok := trainer["numNodes"].(float64); ok && n >= 1 {
		numNodes = int64(n)
	}
	var gpus int64
	if res, ok := trainer["resourcesPerNode"].(map[string]any); ok {
		for _, kind := range []string{"limits", "requests"} {
			if m, ok := res[kind].(map[string]any); ok {
				if s, ok := m["nvidia.com/gpu"]; ok {
					q, err := resource.ParseQuantity(fmt.Sprint(s))
					if err != nil {
						return "", fmt.Errorf("spec.trainer.resourcesPerNode.%s: nvidia.com/gpu: %w", kind, err)
					}
					gpus = max(gpus, q.Value())
				}
			}
		}
	}
	profile, err := nodesFor(gpus)
	if err != nil {
		return "", err
	}
	if kueue {
		if job.Metadata.Labels == nil {
			job.Metadata.Labels = map[string]string{}
		}
		job.Metadata.Labels["kueue.x-k8s.io/queue-name"] = "team-queue"
	} else if gpus > 0 {
		patches, _ := job.Spec["runtimePatches"].([]any)
		job.Spec["runtimePatches"] = append(patches, map[string]any{
			"manager": "platform.example.com/gpu-toleration",
			"trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{map[string]any{
				"name": "node",
				"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
					"tolerations": []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
				}}}},
			}}}}},
		})
	}
	body, err := yaml.Marshal(job)
	if err != nil {
		return "", err
	}
	runtime := ""
	if ref, ok := job.Spec["runtimeRef"].(map[string]any); ok {
		runtime, _ = ref["name"].(string)
	}

	var b strings.Builder
	if schema != "" {
		b.WriteString(schema + "\n")
	}
	b.WriteString("apiVersion: sim.trainersim.dev/v1alpha1\nkind: Scenario\nmetadata:\n")
	fmt.Fprintf(&b, "  name: %s\nspec:\n", name)
	b.WriteString("  # Say what the scenario shows, and where it comes from (an issue, an incident).\n")
	fmt.Fprintf(&b, "  description: The SDK creates TrainJob %s and its node Pods run.\n", job.Metadata.Name)
	b.WriteString("  trainer:\n")
	if kueue {
		b.WriteString("    versions: \">=v2.3.0\"      # the Trainer releases it holds for (Kueue's TrainJob integration)\n")
		b.WriteString("  components: [kueue]         # the real Kueue manager\n")
	} else {
		b.WriteString("    versions: \">=v2.2.0\"      # the Trainer releases it holds for (runtimePatches came in v2.2.0)\n")
	}
	b.WriteString("  nodes:                      # simulated nodes; simctl profiles lists the profiles\n")
	fmt.Fprintf(&b, "  - profile: %s\n    count: %d\n", profile, numNodes)
	if kueue {
		b.WriteString("  queues:                     # a ClusterQueue and its local queue, team-queue\n")
		fmt.Fprintf(&b, "    localQueue: team-queue\n    flavors:\n    - profile: %s\n      gpu: %q\n      cpu: \"1000\"\n      memory: 4000Gi\n", profile, fmt.Sprint(max(gpus, 1)*numNodes))
	}
	if runtime != "" && !defaultRuntime(runtime) {
		fmt.Fprintf(&b, "  # Runtime %s is not one of the default runtimes: add it to setup (docs/scenarios.md).\n", runtime)
	}
	b.WriteString("  actors:                     # who writes; each actor is one field manager\n")
	b.WriteString("  - name: sdk\n    fieldManager: kubeflow-sdk\n")
	b.WriteString("  steps:\n")
	b.WriteString("  - name: the SDK creates the job\n    actor: sdk\n    create:\n")
	for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		b.WriteString("      " + line + "\n")
	}
	b.WriteString("  - name: its node Pods run\n    expect:\n      within: 60s\n      pods:\n")
	b.WriteString("        selector:\n          matchLabels:\n            jobset.sigs.k8s.io/replicatedjob-name: node\n")
	fmt.Fprintf(&b, "        count: %d\n        nodeProfile: %s\n        phase: Running\n", numNodes, profile)
	b.WriteString(`  # Next steps (docs/tutorial.md):
  # - a second manager: an actor (name: kueue, fieldManager: kueue-admission) and a step with
  #   actor: kueue and apply: the TrainJob with its own spec.runtimePatches entry;
  # - a refused write: a step whose write the API server refuses, with
  #   expectError: {status: 403, messageContains: ...};
  # - two writes at the same instant: a step with concurrently: {writes: [...]}.
`)
	return b.String(), nil
}

// defaultRuntime reports whether a ClusterTrainingRuntime of the name is
// one of the default runtimes every cluster simctl starts installs.
func defaultRuntime(name string) bool {
	entries, err := fs.ReadDir(fixtures.FS, "runtimes")
	if err != nil {
		return false
	}
	for _, e := range entries {
		data, err := fs.ReadFile(fixtures.FS, "runtimes/"+e.Name())
		if err != nil {
			continue
		}
		var rt struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal(data, &rt) == nil && rt.Metadata.Name == name {
			return true
		}
	}
	return false
}
