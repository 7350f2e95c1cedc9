// Package kubeletcases generates the kubelet differential's refusal cases:
// one scenario per member of the family of references a kubelet resolves
// before it starts a container (an environment variable from a ConfigMap
// or Secret key, envFrom, ConfigMap, Secret and projected volumes and
// their items, pull secrets, an init container's environment), missing
// and optional or not. Each scenario makes a TrainingRuntime whose Pod
// holds the reference (envFrom and pull secrets are out of runtimePatches'
// reach), runs a TrainJob of it on one CPU node and expects what a kubelet
// answers: the container waiting with the kubelet's reason and a Warning
// event with its message, or the Pod running. make test-kubelet runs every
// case on simctl's simulated kubelet and on hollow kubelets (the kubelet's
// own code), and fails on a verdict that differs: the expectations written
// here are checked against the kubelet, not only against the simulator.
package kubeletcases

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// Prefix begins the name of every case's scenario.
const Prefix = "kubelet-case-"

// Source names the ConfigMap or Secret a case refers to, and the key.
const (
	sourceName = "platform-source"
	key        = "endpoint"
	otherKey   = "other"
)

// A Case is one reference a kubelet resolves.
type Case struct {
	// Name ends the scenario's name (Prefix + name).
	Name string
	// Description says what the Pod refers to, and what a kubelet does.
	Description string
	// Exists makes the source (a ConfigMap, or a Secret when Secret),
	// without the key the reference names.
	Exists, Secret bool
	// Ref adds the reference to the Pod's spec (its container node, or
	// an init container init).
	Ref func(pod map[string]any)
	// Want is the kubelet's answer.
	Want Answer
}

// Answer is what a kubelet does with a Pod of a case.
type Answer struct {
	// Runs: the Pod runs (an optional source, a pull secret).
	Runs bool
	// Init: an init container waits, not the container node.
	Init bool
	// Reason the container waits with (CreateContainerConfigError,
	// ContainerCreating), when it does not run.
	Reason string
	// Event is the reason of the Warning event the kubelet records, and
	// Message the start of its message (the rest names the namespace).
	Event, Message string
}

// container is the Pod's container of a name.
func container(pod map[string]any, name string) map[string]any {
	field := "containers"
	if name == "init" {
		field = "initContainers"
	}
	list, _ := pod[field].([]any)
	for _, c := range list {
		if c := c.(map[string]any); c["name"] == name {
			return c
		}
	}
	c := map[string]any{"name": name, "image": "busybox:1.36", "command": []any{"true"}}
	pod[field] = append(list, c)
	return c
}

// env adds to container name an environment variable from the source's key.
func env(name string, secret bool, optional *bool) func(map[string]any) {
	return func(pod map[string]any) {
		ref := map[string]any{"name": sourceName, "key": key}
		if optional != nil {
			ref["optional"] = *optional
		}
		from := map[string]any{"configMapKeyRef": ref}
		if secret {
			from = map[string]any{"secretKeyRef": ref}
		}
		c := container(pod, name)
		list, _ := c["env"].([]any)
		c["env"] = append(list, map[string]any{"name": "ENDPOINT", "valueFrom": from})
	}
}

// envFrom adds to the container every key of the source.
func envFrom(secret bool, optional *bool) func(map[string]any) {
	return func(pod map[string]any) {
		ref := map[string]any{"name": sourceName}
		if optional != nil {
			ref["optional"] = *optional
		}
		from := map[string]any{"configMapRef": ref}
		if secret {
			from = map[string]any{"secretRef": ref}
		}
		container(pod, "node")["envFrom"] = []any{from}
	}
}

// volume mounts the source in the container as a volume (projected: as a
// projected volume's one source), with the key as its one item when items.
func volume(secret, projected, items bool, optional *bool) func(map[string]any) {
	return func(pod map[string]any) {
		src := map[string]any{"name": sourceName}
		if secret && !projected {
			src = map[string]any{"secretName": sourceName}
		}
		if optional != nil {
			src["optional"] = *optional
		}
		if items {
			src["items"] = []any{map[string]any{"key": key, "path": key}}
		}
		kind := "configMap"
		if secret {
			kind = "secret"
		}
		vol := map[string]any{"name": "source", kind: src}
		if projected {
			vol = map[string]any{"name": "source", "projected": map[string]any{"sources": []any{map[string]any{kind: src}}}}
		}
		pod["volumes"] = []any{vol}
		container(pod, "node")["volumeMounts"] = []any{map[string]any{"name": "source", "mountPath": "/etc/source"}}
	}
}

// pullSecret makes the Pod pull with the source as its image pull secret.
func pullSecret(pod map[string]any) {
	pod["imagePullSecrets"] = []any{map[string]any{"name": sourceName}}
}

// Cases are the family, each member missing and (where the API has it)
// optional. The messages are the kubelet's (k8s.io/kubernetes
// pkg/kubelet/kubelet_pods.go makeEnvironmentVariables and
// getPullSecretsForPod, pkg/volume/configmap, secret and projected):
// the kubelet differential checks them against hollow kubelets.
func Cases() []Case {
	yes, no := true, false
	var cases []Case
	configError := func(message string) Answer {
		return Answer{Reason: "CreateContainerConfigError", Event: "Failed", Message: "Error: " + message}
	}
	mountError := func(message string) Answer {
		return Answer{Reason: "ContainerCreating", Event: "FailedMount", Message: `MountVolume.SetUp failed for volume "source" : ` + message}
	}
	for _, secret := range []bool{false, true} {
		kind, Kind, notFound := "configmap", "ConfigMap", `configmap "platform-source" not found`
		if secret {
			kind, Kind, notFound = "secret", "Secret", `secret "platform-source" not found`
		}
		cases = append(cases,
			Case{Name: "env-" + kind + "-missing", Secret: secret, Ref: env("node", secret, nil), Want: configError(notFound),
				Description: fmt.Sprintf("An environment variable from a key of a %s that does not exist: the container waits, CreateContainerConfigError.", Kind)},
			Case{Name: "env-" + kind + "-missing-optional", Secret: secret, Ref: env("node", secret, &yes), Want: Answer{Runs: true},
				Description: fmt.Sprintf("An optional environment variable from a key of a %s that does not exist: the kubelet leaves it out and the Pod runs.", Kind)},
			Case{Name: "env-" + kind + "-key-missing", Secret: secret, Exists: true, Ref: env("node", secret, &no), Want: configError(fmt.Sprintf("couldn't find key %s in %s ", key, Kind)),
				Description: fmt.Sprintf("An environment variable from a key the %s lacks: the container waits, CreateContainerConfigError.", Kind)},
			Case{Name: "env-" + kind + "-key-missing-optional", Secret: secret, Exists: true, Ref: env("node", secret, &yes), Want: Answer{Runs: true},
				Description: fmt.Sprintf("An optional environment variable from a key the %s lacks: the kubelet leaves it out and the Pod runs.", Kind)},
			Case{Name: "envfrom-" + kind + "-missing", Secret: secret, Ref: envFrom(secret, nil), Want: configError(notFound),
				Description: fmt.Sprintf("envFrom a %s that does not exist: the container waits, CreateContainerConfigError.", Kind)},
			Case{Name: "envfrom-" + kind + "-missing-optional", Secret: secret, Ref: envFrom(secret, &yes), Want: Answer{Runs: true},
				Description: fmt.Sprintf("envFrom an optional %s that does not exist: the Pod runs.", Kind)},
			Case{Name: "init-env-" + kind + "-missing", Secret: secret, Ref: env("init", secret, nil), Want: Answer{Init: true, Reason: "CreateContainerConfigError", Event: "Failed", Message: "Error: " + notFound},
				Description: fmt.Sprintf("An init container's environment variable from a %s that does not exist: the init container waits, CreateContainerConfigError, and holds the container.", Kind)},
		)
		keyMissing := "configmap references non-existent config key: " + key
		if secret {
			keyMissing = "references non-existent secret key: " + key
		}
		for _, projected := range []bool{false, true} {
			name, what := kind+"-volume", "A "+Kind+" volume"
			if projected {
				name, what = "projected-"+kind, "A projected volume of a "+Kind
			}
			cases = append(cases,
				Case{Name: name + "-missing", Secret: secret, Ref: volume(secret, projected, false, nil), Want: mountError(notFound),
					Description: what + " that does not exist: the volume is not mounted (FailedMount), the container waits in ContainerCreating."},
				Case{Name: name + "-missing-optional", Secret: secret, Ref: volume(secret, projected, false, &yes), Want: Answer{Runs: true},
					Description: what + ", optional, that does not exist: mounted empty, the Pod runs."},
				Case{Name: name + "-item-missing", Secret: secret, Exists: true, Ref: volume(secret, projected, true, nil), Want: mountError(keyMissing),
					Description: what + " whose item names a key it lacks: the volume is not mounted (FailedMount), the container waits in ContainerCreating."},
				Case{Name: name + "-item-missing-optional", Secret: secret, Exists: true, Ref: volume(secret, projected, true, &yes), Want: Answer{Runs: true},
					Description: what + ", optional, whose item names a key it lacks: the item is left out, the Pod runs."},
			)
		}
	}
	cases = append(cases, Case{Name: "pull-secret-missing", Ref: pullSecret,
		Want:        Answer{Runs: true, Event: "FailedToRetrieveImagePullSecret", Message: "Unable to retrieve some image pull secrets (platform-source); attempting to pull the image may not succeed."},
		Description: "An image pull secret that does not exist: a Warning event, and the kubelet pulls all the same; the Pod runs."})
	return cases
}

// Scenario is the scenario of c, as YAML.
func Scenario(c Case) ([]byte, error) {
	pod := map[string]any{"restartPolicy": "OnFailure"}
	container(pod, "node")
	c.Ref(pod)
	runtime := map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
		"metadata": map[string]any{"name": "kubelet-case", "labels": map[string]any{"trainer.kubeflow.org/framework": "torch"}},
		"spec": map[string]any{
			"mlPolicy": map[string]any{"numNodes": 1, "torch": map[string]any{}},
			"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{map[string]any{
				"name": "node",
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
					"spec":     map[string]any{"template": map[string]any{"spec": pod}},
				},
			}}}},
		},
	}
	setup := []any{map[string]any{"object": runtime}}
	if c.Exists {
		kind, data := "ConfigMap", "data"
		value := any("https://hub.example.com")
		if c.Secret {
			kind, value = "Secret", "aHR0cHM6Ly9odWIuZXhhbXBsZS5jb20=" // the same, base64
		}
		setup = append(setup, map[string]any{"object": map[string]any{
			"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": sourceName},
			data: map[string]any{otherKey: value},
		}})
	}
	sel := map[string]any{"matchLabels": map[string]any{"jobset.sigs.k8s.io/replicatedjob-name": "node"}}
	pods := map[string]any{"selector": sel, "count": 1, "nodeProfile": "cpu"}
	expect := map[string]any{"within": "60s", "pods": pods}
	switch {
	case c.Want.Runs:
		pods["phase"] = "Running"
	default:
		pods["phase"] = "Pending"
		statuses := "containerStatuses"
		name := "node"
		if c.Want.Init {
			statuses, name = "initContainerStatuses", "init"
		}
		pods["all"] = map[string]any{"status": map[string]any{statuses: []any{map[string]any{
			"name": name, "ready": false, "state": map[string]any{"waiting": map[string]any{"reason": c.Want.Reason}},
		}}}}
	}
	if c.Want.Event != "" {
		expect["events"] = []any{map[string]any{"involvedKind": "Pod", "reason": c.Want.Event, "messageContains": c.Want.Message}}
	}
	doc := map[string]any{
		"apiVersion": "sim.trainersim.dev/v1alpha1",
		"kind":       "Scenario",
		"metadata": map[string]any{
			"name":   Prefix + c.Name,
			"labels": map[string]any{"area": "kubelet", "generated": "kubelet-cases"},
		},
		"spec": map[string]any{
			"description": c.Description + " Generated by sim/kubeletcases for the kubelet differential.",
			"nodes":       []any{map[string]any{"profile": "cpu", "count": 1}},
			"setup":       setup,
			"actors":      []any{map[string]any{"name": "sdk", "fieldManager": "kubeflow-sdk"}},
			"steps": []any{
				map[string]any{
					"name": "the SDK creates the job of the runtime", "actor": "sdk",
					"create": map[string]any{
						"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
						"metadata": map[string]any{"name": "train"},
						"spec":     map[string]any{"runtimeRef": map[string]any{"name": "kubelet-case", "kind": "TrainingRuntime"}},
					},
				},
				map[string]any{"name": "the kubelet answers", "expect": expect},
			},
		},
	}
	return yaml.Marshal(doc)
}

// Write writes every case's scenario into dir, one file each, and
// returns their paths.
func Write(dir string) ([]string, error) {
	var paths []string
	for _, c := range Cases() {
		data, err := Scenario(c)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
		path := filepath.Join(dir, Prefix+c.Name+".yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
