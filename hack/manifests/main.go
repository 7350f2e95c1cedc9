// Command manifests renders the install manifest of Kubeflow Trainer and
// JobSet that the kind provider applies: the Trainer's
// manifests/overlays/manager (which pulls in JobSet, as upstream's
// hack/e2e-setup-cluster.sh installs it), built with kustomize from the
// modules in the Go module cache, with no network.
//
// One input differs from upstream: the Trainer's third-party/jobset lists
// JobSet's release manifest by its GitHub URL, which cannot be fetched here.
// It is replaced by JobSet's config/default rendered from the JobSet module,
// which is how JobSet's Makefile (target artifacts) makes that release
// manifest; the URL's version must be the JobSet module's. Every other file,
// image names, tags and patches included, is upstream's.
//
//	go run ./hack/manifests TRAINER_DIR JOBSET_DIR > fixtures/install/trainer-manager.yaml
//
// With -rbac it prints only the identities and permissions of what it renders
// (Namespaces, ServiceAccounts, ClusterRoles, ClusterRoleBindings, Roles and
// RoleBindings): what an envtest cluster gives the components it runs in
// simctl's process or as processes, so that each acts as the user it is on a
// cluster installed from these manifests. -rbac with a single directory renders
// that kustomization instead (Kueue's config/default, KWOK's kustomize/kwok):
//
//	go run ./hack/manifests -rbac TRAINER_DIR JOBSET_DIR > fixtures/rbac/trainer-manager.yaml
//	go run ./hack/manifests -rbac KUSTOMIZATION_DIR > fixtures/rbac/kwok.yaml
//
// With -kueue it renders Kueue's release manifest from the Kueue module at
// KUEUE_DIR, as Kueue's Makefile (targets prepare-manifests and artifacts)
// makes it: config/components/manager's image set to the release's
// (kustomize edit set image controller=registry.k8s.io/kueue/kueue:<version>),
// then config/default built. The kind provider applies it when a run needs
// Kueue:
//
//	go run ./hack/manifests -kueue KUEUE_DIR > fixtures/install/kueue.yaml
//
// The kind provider's kueue-e2e layout is the cluster of Kueue's own e2e
// set-up (hack/testing/e2e-common.sh): JobSet from its release manifest
// (-jobset: config/default, its image set as its release sets it), the
// Trainer's overlays/manager without its third-party JobSet
// (-trainer-without-jobset), and Kueue's test/e2e/config/extended
// (-kueue-e2e, the image set as -kueue sets it):
//
//	go run ./hack/manifests -jobset JOBSET_DIR > fixtures/install/kueue-e2e/jobset.yaml
//	go run ./hack/manifests -trainer-without-jobset TRAINER_DIR > fixtures/install/kueue-e2e/trainer.yaml
//	go run ./hack/manifests -kueue-e2e KUEUE_DIR > fixtures/install/kueue-e2e/kueue.yaml
package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// jobsetRelease is the JobSet release manifest the Trainer's
// third-party/jobset lists.
var jobsetRelease = regexp.MustCompile(`https://github\.com/kubernetes-sigs/jobset/releases/download/[^/\s]+/manifests\.yaml`)

// rbacKinds are the kinds -rbac keeps.
var rbacKinds = map[string]bool{
	"Namespace": true, "ServiceAccount": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
}

func main() {
	args := os.Args[1:]
	mode := ""
	if len(args) > 0 && strings.HasPrefix(args[0], "-") {
		mode, args = args[0], args[1:]
	}
	var out []byte
	var err error
	switch {
	case mode == "" && len(args) == 2:
		out, err = render(args[0], args[1], false)
	case mode == "-rbac" && len(args) == 2:
		out, err = render(args[0], args[1], true)
	case mode == "-rbac" && len(args) == 1:
		out, err = renderRBAC(args[0])
	case mode == "-webhooks" && len(args) == 1:
		out, err = renderWebhooks(args[0])
	case mode == "-kueue" && len(args) == 1:
		out, err = renderKueue(args[0], kueueRelease)
	case mode == "-kueue-e2e" && len(args) == 1:
		out, err = renderKueue(args[0], kueueE2E)
	case mode == "-jobset" && len(args) == 1:
		out, err = renderJobSet(args[0])
	case mode == "-trainer-without-jobset" && len(args) == 1:
		out, err = renderTrainerWithoutJobSet(args[0])
	default:
		fmt.Fprintln(os.Stderr, "usage: manifests [-rbac] TRAINER_DIR JOBSET_DIR | manifests -rbac KUSTOMIZATION_DIR | manifests -webhooks KUSTOMIZATION_DIR\n"+
			"       manifests -kueue KUEUE_DIR | manifests -kueue-e2e KUEUE_DIR | manifests -jobset JOBSET_DIR | manifests -trainer-without-jobset TRAINER_DIR")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "manifests: %v\n", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

// webhookKinds are the kinds -webhooks keeps.
var webhookKinds = map[string]bool{"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true}

// renderWebhooks builds the kustomization at dir (a release's
// manifests/base/webhook) and keeps its webhook configurations: named,
// selected and patched as a cluster installed from the release's
// manifests has them (the Trainer's defaulter.trainer.kubeflow.org, whose
// name orders it among the mutating webhooks), which the envtest provider
// points at its own servers.
func renderWebhooks(dir string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("failed to render %s: %w", dir, err)
	}
	out, err := keepKinds(res, webhookKinds)
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# Generated by hack/manifests -webhooks (make fixtures): the webhook configurations of\n# %s as installed. DO NOT EDIT.\n", moduleAndPath(dir))
	return append([]byte(header), out...), nil
}

// renderRBAC builds the kustomization at dir and keeps its rbacKinds.
func renderRBAC(dir string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("failed to render %s: %w", dir, err)
	}
	out, err := keepRBAC(res)
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# Generated by hack/manifests -rbac (make fixtures): the identities and RBAC of\n# %s. DO NOT EDIT.\n", moduleAndPath(dir))
	return append([]byte(header), out...), nil
}

// keepRBAC removes every resource but those of rbacKinds and renders the rest.
func keepRBAC(res resmap.ResMap) ([]byte, error) { return keepKinds(res, rbacKinds) }

// keepKinds removes every resource but those of kinds and renders the rest.
func keepKinds(res resmap.ResMap, kinds map[string]bool) ([]byte, error) {
	for _, r := range res.Resources() {
		if !kinds[r.GetKind()] {
			if err := res.Remove(r.CurId()); err != nil {
				return nil, err
			}
		}
	}
	return res.AsYaml()
}

// moduleAndPath names dir in the module cache as module@version/path: the
// same on every machine, whatever its cache's place ($GOMODCACHE, else
// $GOPATH/pkg/mod).
func moduleAndPath(dir string) string {
	dir = filepath.ToSlash(dir)
	if cache := os.Getenv("GOMODCACHE"); cache != "" {
		if rest, ok := strings.CutPrefix(dir, strings.TrimSuffix(filepath.ToSlash(cache), "/")+"/"); ok {
			return rest
		}
	}
	if i := strings.Index(dir, "/pkg/mod/"); i >= 0 {
		return dir[i+len("/pkg/mod/"):]
	}
	return dir
}

// render builds overlays/manager of the Trainer module at trainerDir, with
// JobSet's release manifest rendered from the JobSet module at jobsetDir;
// with rbac, only its rbacKinds.
func render(trainerDir, jobsetDir string, rbac bool) ([]byte, error) {
	version := jobsetDir[strings.LastIndex(jobsetDir, "@")+1:]
	release := "https://github.com/kubernetes-sigs/jobset/releases/download/" + version + "/manifests.yaml"

	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	jobset, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(jobsetDir, "config", "default"))
	if err != nil {
		return nil, fmt.Errorf("failed to render JobSet's config/default: %w", err)
	}
	jobsetYAML, err := jobset.AsYaml()
	if err != nil {
		return nil, err
	}

	mem := filesys.MakeFsInMemory()
	if err := copyToMemory(mem, filepath.Join(trainerDir, "manifests"), "/manifests"); err != nil {
		return nil, fmt.Errorf("failed to read the Trainer's manifests: %w", err)
	}
	kustomization := "/manifests/third-party/jobset/kustomization.yaml"
	data, err := mem.ReadFile(kustomization)
	if err != nil {
		return nil, err
	}
	listed := jobsetRelease.Find(data)
	switch {
	case listed == nil:
		return nil, fmt.Errorf("%s lists no JobSet release manifest", kustomization)
	case string(listed) != release && !rbac:
		return nil, fmt.Errorf("%s does not list %s: the JobSet module is not the version the Trainer installs", kustomization, release)
	}
	// With -rbac, a release whose go.mod pins another JobSet patch release
	// than its manifests install (v2.2.x: v0.11.1 against v0.11.0) gets the
	// RBAC of the JobSet it runs.
	data = bytes.Replace(data, listed, []byte("manifests.yaml"), 1)
	if err := mem.WriteFile(kustomization, data); err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/manifests/third-party/jobset/manifests.yaml", jobsetYAML); err != nil {
		return nil, err
	}
	res, err := k.Run(mem, "/manifests/overlays/manager")
	if err != nil {
		return nil, fmt.Errorf("failed to render the Trainer's overlays/manager: %w", err)
	}
	what := ""
	var out []byte
	if rbac {
		what = "the identities and RBAC of "
		out, err = keepRBAC(res)
	} else {
		out, err = res.AsYaml()
	}
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# Generated by hack/manifests (make fixtures): %sKubeflow Trainer %s manifests/overlays/manager,\n# with JobSet %s's config/default as its release manifest. DO NOT EDIT.\n",
		what, trainerDir[strings.LastIndex(trainerDir, "@")+1:], version)
	return append([]byte(header), out...), nil
}

// kueueRegistry is where Kueue's releases put its image: its release workflow
// (.github/workflows/release-utils.yml) runs make release-artifacts
// IMAGE_REGISTRY=registry.k8s.io/kueue GIT_TAG=<version>, and its Makefile
// names the image $(IMAGE_REGISTRY)/kueue:$(GIT_TAG).
const kueueRegistry = "registry.k8s.io/kueue"

// kueueKustomization is a kustomization of the Kueue module that -kueue and
// -kueue-e2e render.
type kueueKustomization struct {
	// dir is its directory in the module.
	dir string
	// flag is hack/manifests' flag that renders it, what says in the
	// header what it is.
	flag, what string
}

var (
	// kueueRelease is Kueue's release manifest (config/default).
	kueueRelease = kueueKustomization{dir: "config/default", flag: "-kueue", what: "config/default"}
	// kueueE2E is the Kueue of Kueue's own extended e2e suite
	// (test/e2e/config/extended: config/dev with its e2e patches, one
	// replica, the configuration of every integration), which its
	// hack/testing/e2e-common.sh applies with E2E_CONFIG_FOLDER=extended.
	kueueE2E = kueueKustomization{dir: "test/e2e/config/extended", flag: "-kueue-e2e", what: "test/e2e/config/extended (its extended e2e suite's)"}
)

// renderKueue builds the kustomization k of the Kueue module at kueueDir
// with the manager's image set as Kueue's release sets it (its Makefile's
// prepare-manifests: kustomize edit set image controller=IMAGE in
// config/components/manager), in memory.
func renderKueue(kueueDir string, k kueueKustomization) ([]byte, error) {
	return renderWithReleaseImage(kueueDir, "Kueue", []string{"config", "test/e2e/config"}, k.dir, kueueRegistry+"/kueue", func(version string) string {
		return fmt.Sprintf("# Generated by hack/manifests %s (make fixtures): Kueue %s %s, its image set as\n# its release sets it (controller=%s/kueue:%s in config/components/manager). DO NOT EDIT.\n",
			k.flag, version, k.what, kueueRegistry, version)
	})
}

// jobsetRegistry is where JobSet's releases put its image: its release
// (make artifacts IMAGE_REGISTRY=registry.k8s.io/jobset) names it
// $(IMAGE_REGISTRY)/jobset:$(GIT_TAG), as the Trainer's third-party/jobset
// renames it too.
const jobsetRegistry = "registry.k8s.io/jobset"

// renderJobSet builds JobSet's release manifest from the JobSet module at
// jobsetDir as its Makefile's artifacts target does: config/components/
// manager's image set to the release's, then config/default built (JobSet
// in jobset-system).
func renderJobSet(jobsetDir string) ([]byte, error) {
	return renderWithReleaseImage(jobsetDir, "JobSet", []string{"config"}, "config/default", jobsetRegistry+"/jobset", func(version string) string {
		return fmt.Sprintf("# Generated by hack/manifests -jobset (make fixtures): JobSet %s's release manifest, config/default\n# with its image set as its release sets it (controller=%s/jobset:%s). DO NOT EDIT.\n",
			version, jobsetRegistry, version)
	})
}

// renderWithReleaseImage builds the kustomization build of the module of
// project at moduleDir, its dirs copied into memory with the controller's
// image set to image at the module's version (withReleaseImage), under the
// header of that version.
func renderWithReleaseImage(moduleDir, project string, dirs []string, build, image string, header func(version string) string) ([]byte, error) {
	version, err := moduleVersion(moduleDir, project)
	if err != nil {
		return nil, err
	}
	mem, err := withReleaseImage(moduleDir, dirs, image, version)
	if err != nil {
		return nil, err
	}
	out, err := buildYAML(mem, "/"+build)
	if err != nil {
		return nil, err
	}
	return append([]byte(header(version)), out...), nil
}

// trainerThirdPartyJobSet is the resource of the Trainer's overlays/manager
// that installs JobSet with it.
const trainerThirdPartyJobSet = "../../third-party/jobset"

// renderTrainerWithoutJobSet builds the Trainer's overlays/manager of the
// module at trainerDir without its third-party JobSet, as its kustomization
// says to install it on a cluster that runs JobSet already ("Comment this
// line if JobSet is installed") and as Kueue's e2e set-up installs it
// (install_kubeflow_trainer removes that resource).
func renderTrainerWithoutJobSet(trainerDir string) ([]byte, error) {
	version, err := moduleVersion(trainerDir, "Trainer")
	if err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	if err := copyToMemory(mem, filepath.Join(trainerDir, "manifests"), "/manifests"); err != nil {
		return nil, fmt.Errorf("failed to read the Trainer's manifests: %w", err)
	}
	file := "/manifests/overlays/manager/kustomization.yaml"
	data, err := mem.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var k types.Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", file, err)
	}
	i := slices.Index(k.Resources, trainerThirdPartyJobSet)
	if i < 0 {
		return nil, fmt.Errorf("%s lists no %s", file, trainerThirdPartyJobSet)
	}
	k.Resources = slices.Delete(k.Resources, i, i+1)
	if data, err = yaml.Marshal(&k); err != nil {
		return nil, err
	}
	if err := mem.WriteFile(file, data); err != nil {
		return nil, err
	}
	out, err := buildYAML(mem, "/manifests/overlays/manager")
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# Generated by hack/manifests -trainer-without-jobset (make fixtures): Kubeflow Trainer %s\n# manifests/overlays/manager without %s. DO NOT EDIT.\n", version, trainerThirdPartyJobSet)
	return append([]byte(header), out...), nil
}

// withReleaseImage copies dirs of the module at moduleDir into memory and
// sets there the image of config/components/manager's controller as the
// project's release does (kustomize edit set image
// controller=image:version): the module cache is read-only.
func withReleaseImage(moduleDir string, dirs []string, image, version string) (filesys.FileSystem, error) {
	mem := filesys.MakeFsInMemory()
	for _, dir := range dirs {
		if err := copyToMemory(mem, filepath.Join(moduleDir, dir), "/"+dir); err != nil {
			return nil, fmt.Errorf("failed to read %s of %s: %w", dir, moduleDir, err)
		}
	}
	if err := setImage(mem, "/config/components/manager/kustomization.yaml", "controller", image, version); err != nil {
		return nil, err
	}
	return mem, nil
}

// buildYAML builds the kustomization at dir of fsys into YAML.
func buildYAML(fsys filesys.FileSystem, dir string) ([]byte, error) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("failed to render %s: %w", dir, err)
	}
	return res.AsYaml()
}

// moduleVersion is the version of the module at dir in the module cache
// (module@version).
func moduleVersion(dir, project string) (string, error) {
	at := strings.LastIndex(dir, "@")
	if at < 0 {
		return "", fmt.Errorf("%s is not a %s module in the module cache (module@version)", dir, project)
	}
	return dir[at+1:], nil
}

// setImage does what kustomize edit set image name=newName:newTag does to
// the kustomization file: the images entry of name gets newName and newTag
// (an entry of its own when it has none).
func setImage(fsys filesys.FileSystem, file, name, newName, newTag string) error {
	data, err := fsys.ReadFile(file)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return fmt.Errorf("failed to read %s: %w", file, err)
	}
	image := types.Image{Name: name, NewName: newName, NewTag: newTag}
	i := slices.IndexFunc(k.Images, func(img types.Image) bool { return img.Name == name })
	if i < 0 {
		k.Images = append(k.Images, image)
	} else {
		k.Images[i] = image
	}
	if data, err = yaml.Marshal(&k); err != nil {
		return err
	}
	return fsys.WriteFile(file, data)
}

// copyToMemory copies the files under root into mem under dir, for an
// in-memory kustomization to be edited before it is rendered: the module
// cache is read-only.
func copyToMemory(mem filesys.FileSystem, root, dir string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join(dir, filepath.ToSlash(rel)), data)
	})
}
