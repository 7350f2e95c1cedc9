# kind.mk: a kind cluster with Kubeflow Trainer and JobSet as Deployments, from
# images built on this machine with no container registry (hack/kind/README.md).
# Included by the top Makefile, which defines PROJECT_DIR, BIN_DIR, GO,
# K8S_VERSION, CONTROLPLANE_MOD, KWOK_MOD and KUEUE_VERSION.
#
#   make kind-images        every image below; a second run takes seconds
#   make kind-docker        ensure a usable Docker engine, print its DOCKER_HOST
#   make kind-smoke         create a cluster, install Trainer+JobSet, run a Pod, delete it
#   make kind-docker-stop   stop the project's private dockerd, if it runs
#
# Versions come from where they are pinned: Kubernetes from hack/controlplane
# (K8S_VERSION), Trainer and JobSet from go.mod, KWOK from hack/kwok, kind from
# hack/kind/tools, Kueue from sim/releases (releases.KueueVersion, whose nested
# module hack/kueue/<version> make assets builds it from). kind-verify checks
# that the nested modules here agree.

KIND_DIR := $(PROJECT_DIR)/hack/kind
KIND_BUILD := $(BIN_DIR)/kind-build
KIND := $(BIN_DIR)/kind
KIND_CLUSTER ?= trainersim

# gomod_version(go.mod, module): the version a go.mod requires of module.
gomod_version = $(shell sed -n 's|^\(require \)\{0,1\}[[:space:]]*$(subst .,\.,$(2)) \(v[^ ]*\).*|\2|p' $(1) | head -n1)
KIND_VERSION := $(call gomod_version,$(KIND_DIR)/tools/go.mod,sigs.k8s.io/kind)
TRAINER_VERSION := $(call gomod_version,$(PROJECT_DIR)/go.mod,github.com/kubeflow/trainer/v2)
JOBSET_VERSION := $(call gomod_version,$(PROJECT_DIR)/go.mod,sigs.k8s.io/jobset)
KWOK_VERSION := $(call gomod_version,$(KWOK_MOD)/go.mod,sigs.k8s.io/kwok)
KIND_DEBIAN_SUITE ?= bookworm
GOMODCACHE_DIR = $(shell $(GO) env GOMODCACHE)
KIND_ROOT = $(GOMODCACHE_DIR)/sigs.k8s.io/kind@$(KIND_VERSION)
KIND_TRAINER_ROOT = $(GOMODCACHE_DIR)/github.com/kubeflow/trainer/v2@$(TRAINER_VERSION)
KIND_JOBSET_ROOT = $(GOMODCACHE_DIR)/sigs.k8s.io/jobset@$(JOBSET_VERSION)

# Images. The Trainer, JobSet, KWOK and Kueue names and tags are exactly the ones
# their upstream manifests reference (unit tests of sim/providers/kind check the
# Trainer's, JobSet's and Kueue's against fixtures/install), so those
# manifests apply unmodified and, the tags not being :latest, use the loaded image
# without pulling (imagePullPolicy IfNotPresent).
KIND_BASE_IMAGE := trainersim.dev/kind-base:$(KIND_VERSION)-$(KIND_DEBIAN_SUITE)
KIND_NODE_IMAGE := trainersim.dev/kind-node:v$(K8S_VERSION)
TRAINER_IMAGE := ghcr.io/kubeflow/trainer/trainer-controller-manager:$(TRAINER_VERSION)
JOBSET_IMAGE := registry.k8s.io/jobset/jobset:$(JOBSET_VERSION)
KWOK_IMAGE := registry.k8s.io/kwok/kwok:$(KWOK_VERSION)
# Kueue's release manifests name its image so (its release workflow runs make
# release-artifacts IMAGE_REGISTRY=registry.k8s.io/kueue GIT_TAG=<version>).
KUEUE_IMAGE := registry.k8s.io/kueue/kueue:$(KUEUE_VERSION)
# kind's default storage, preloaded in the node: rancher's local-path-provisioner
# and a helper image with Debian's static busybox (the host's suite, from apt).
LOCAL_PATH_VERSION := $(call gomod_version,$(KIND_DIR)/images/local-path-provisioner/go.mod,github.com/rancher/local-path-provisioner)
LOCAL_PATH_IMAGE := trainersim.dev/local-path-provisioner:$(LOCAL_PATH_VERSION)
LOCAL_PATH_HELPER_IMAGE := trainersim.dev/local-path-helper:busybox-$(shell . /etc/os-release && echo $$VERSION_CODENAME)
KIND_CONTROLLER_IMAGES := $(TRAINER_IMAGE) $(JOBSET_IMAGE) $(KWOK_IMAGE)

# Every docker and kind command runs against the engine kind-docker chose.
KIND_DOCKER_ENV := $(KIND_BUILD)/docker-host
WITH_DOCKER = DOCKER_HOST="$$(cat $(KIND_DOCKER_ENV))"

# Static binaries (CGO_ENABLED=0: they go into FROM scratch images), built nice'd
# to leave the machine usable. Without -j, make runs one go build at a time.
KIND_GO_BUILD = CGO_ENABLED=0 nice $(GO) build -trimpath
KIND_K8S_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=v$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(K8S_VERSION))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION))) \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=v$(K8S_VERSION)
K8S_NODE_DIR := $(KIND_BUILD)/k8s/v$(K8S_VERSION)
K8S_NODE_BINARIES := $(addprefix $(K8S_NODE_DIR)/,kubelet kubeadm kubectl kube-proxy \
	kube-apiserver kube-controller-manager kube-scheduler)
K8S_NODE_ALL := $(K8S_NODE_BINARIES) $(addprefix $(K8S_NODE_DIR)/,etcd coredns pause crictl)
TRAINER_BIN := $(KIND_BUILD)/trainer/$(TRAINER_VERSION)/manager
JOBSET_BIN := $(KIND_BUILD)/jobset/$(JOBSET_VERSION)/manager
KWOK_BIN := $(KIND_BUILD)/kwok/$(KWOK_VERSION)/kwok
# Kueue's manager: the static binary make assets builds (CGO_ENABLED=0).
KUEUE_BIN := $(BIN_DIR)/kueue/$(KUEUE_VERSION)/kueue
LOCAL_PATH_BIN := $(KIND_BUILD)/local-path-provisioner/$(LOCAL_PATH_VERSION)/local-path-provisioner
BUSYBOX_BIN := $(KIND_BUILD)/local-path-helper/busybox

##@ kind (a cluster from images built offline)

.PHONY: kind-images
kind-images: kind-node-image kind-controller-images $(KIND) ## Build the kind node image, the Trainer, JobSet, KWOK and Kueue images and bin/kind (cached).

.PHONY: kind-images-present
kind-images-present: ## Exit 0 when every kind image is built already in the engine kind uses; builds and installs nothing (.ci/run asks).
	@command -v dockerd >/dev/null && host="$$($(KIND_DIR)/docker/dockerd.sh 2>/dev/null)" \
		&& DOCKER_HOST="$$host" docker image inspect $(KIND_NODE_IMAGE) $(KIND_CONTROLLER_IMAGES) $(KUEUE_IMAGE) >/dev/null 2>&1

.PHONY: kind-docker
kind-docker: ## Ensure a Docker engine kind can use (the project's private dockerd when needed); print its DOCKER_HOST.
	@mkdir -p $(KIND_BUILD)
	@$(KIND_DIR)/docker/dockerd.sh > $(KIND_DOCKER_ENV).tmp && mv $(KIND_DOCKER_ENV).tmp $(KIND_DOCKER_ENV)
	@echo "DOCKER_HOST=$$(cat $(KIND_DOCKER_ENV))"

.PHONY: kind-docker-stop
kind-docker-stop: ## Stop the project's private dockerd (its images stay in /var/lib/trainersim-docker).
	$(KIND_DIR)/docker/dockerd.sh stop

.PHONY: kind-verify
kind-verify: ## Check that hack/kind's nested modules pin the versions go.mod and hack/controlplane pin.
	@test "$(call gomod_version,$(KIND_DIR)/k8s/go.mod,k8s.io/kubernetes)" = "v$(K8S_VERSION)" \
		|| { echo "hack/kind/k8s/go.mod does not require k8s.io/kubernetes v$(K8S_VERSION) (hack/controlplane)"; exit 1; }
	@test "$(call gomod_version,$(KIND_DIR)/images/trainer/go.mod,github.com/kubeflow/trainer/v2)" = "$(TRAINER_VERSION)" \
		|| { echo "hack/kind/images/trainer/go.mod does not require the trainer $(TRAINER_VERSION) of go.mod"; exit 1; }
	@test "$(call gomod_version,$(KIND_DIR)/images/jobset/go.mod,sigs.k8s.io/jobset)" = "$(JOBSET_VERSION)" \
		|| { echo "hack/kind/images/jobset/go.mod does not require the JobSet $(JOBSET_VERSION) of go.mod"; exit 1; }
	@test -n "$(KUEUE_VERSION)" && test "$(call gomod_version,$(PROJECT_DIR)/hack/kueue/$(KUEUE_VERSION)/go.mod,sigs.k8s.io/kueue)" = "$(KUEUE_VERSION)" \
		|| { echo "hack/kueue/$(KUEUE_VERSION)/go.mod does not require the Kueue $(KUEUE_VERSION) of sim/releases"; exit 1; }

.PHONY: kind-base-image
kind-base-image: kind-docker
	cd $(KIND_DIR)/tools && $(GO) mod download sigs.k8s.io/kind
	$(WITH_DOCKER) $(KIND_DIR)/node/base-image.sh $(KIND_BASE_IMAGE) $(KIND_ROOT)

.PHONY: kind-k8s-images
kind-k8s-images: kind-base-image $(K8S_NODE_ALL)
	$(WITH_DOCKER) $(KIND_DIR)/node/k8s-images.sh $(K8S_NODE_DIR) $(KIND_BASE_IMAGE)

.PHONY: kind-storage-images
kind-storage-images: kind-docker $(LOCAL_PATH_BIN) $(BUSYBOX_BIN)
	$(WITH_DOCKER) $(KIND_DIR)/images/scratch-image.sh $(LOCAL_PATH_IMAGE) $(LOCAL_PATH_BIN) /usr/local/bin/local-path-provisioner
	$(WITH_DOCKER) $(KIND_DIR)/images/scratch-image.sh $(LOCAL_PATH_HELPER_IMAGE) $(BUSYBOX_BIN) /bin/busybox "" $(BUSYBOX_BIN)-links.tar

.PHONY: kind-node-image
kind-node-image: kind-k8s-images kind-storage-images ## Build the kind node image trainersim.dev/kind-node:v<K8S_VERSION>.
	$(WITH_DOCKER) $(KIND_DIR)/node/node-image.sh $(KIND_NODE_IMAGE) $(KIND_BASE_IMAGE) $(K8S_NODE_DIR) \
		$(LOCAL_PATH_IMAGE) $(LOCAL_PATH_HELPER_IMAGE)

.PHONY: kind-controller-images
kind-controller-images: kind-docker $(TRAINER_BIN) $(JOBSET_BIN) $(KWOK_BIN) $(KUEUE_BIN)
	$(WITH_DOCKER) $(KIND_DIR)/images/scratch-image.sh $(TRAINER_IMAGE) $(TRAINER_BIN) /manager 65532:65532
	$(WITH_DOCKER) $(KIND_DIR)/images/scratch-image.sh $(JOBSET_IMAGE) $(JOBSET_BIN) /manager 65532:65532
	$(WITH_DOCKER) $(KIND_DIR)/images/scratch-image.sh $(KWOK_IMAGE) $(KWOK_BIN) /usr/local/bin/kwok
	$(WITH_DOCKER) $(KIND_DIR)/images/scratch-image.sh $(KUEUE_IMAGE) $(KUEUE_BIN) /manager 65532:65532

.PHONY: kind-smoke
kind-smoke: kind-images build ## Create a kind cluster, install Trainer+JobSet, run one GPU TrainJob end to end, delete the cluster.
	$(SIMCTL) smoke --cluster kind --kind-name $(KIND_CLUSTER)-smoke

# Kubernetes node and control-plane binaries, etcd: the module in hack/kind/k8s is
# hack/controlplane's plus the node tools.
$(filter-out %/etcd %/coredns %/pause %/crictl,$(K8S_NODE_ALL)) &: $(KIND_DIR)/k8s/go.mod | kind-verify
	@mkdir -p $(K8S_NODE_DIR)
	@echo "building static kubelet, kubeadm, kubectl, kube-proxy, kube-apiserver, kube-controller-manager, kube-scheduler v$(K8S_VERSION)"
	cd $(KIND_DIR)/k8s && $(KIND_GO_BUILD) -ldflags '$(KIND_K8S_LDFLAGS)' -o $(K8S_NODE_DIR)/ \
		$(addprefix k8s.io/kubernetes/cmd/,$(notdir $(K8S_NODE_BINARIES)))

$(K8S_NODE_DIR)/etcd: $(KIND_DIR)/k8s/go.mod
	cd $(KIND_DIR)/k8s && $(KIND_GO_BUILD) -ldflags '-s -w' -o $@ go.etcd.io/etcd/server/v3

$(K8S_NODE_DIR)/coredns: $(KIND_DIR)/images/coredns/go.mod $(KIND_DIR)/images/coredns/main.go
	cd $(KIND_DIR)/images/coredns && $(KIND_GO_BUILD) -ldflags '-s -w' -o $@ .

$(K8S_NODE_DIR)/pause: $(KIND_DIR)/images/pause/go.mod $(KIND_DIR)/images/pause/main.go
	cd $(KIND_DIR)/images/pause && $(KIND_GO_BUILD) -ldflags '-s -w' -o $@ .

$(K8S_NODE_DIR)/crictl: $(KIND_DIR)/tools/go.mod
	cd $(KIND_DIR)/tools && $(KIND_GO_BUILD) -ldflags '-s -w' -o $@ sigs.k8s.io/cri-tools/cmd/crictl

$(KIND): $(KIND_DIR)/tools/go.mod
	cd $(KIND_DIR)/tools && $(KIND_GO_BUILD) -ldflags '-s -w' -o $@ sigs.k8s.io/kind

$(TRAINER_BIN): $(KIND_DIR)/images/trainer/go.mod | kind-verify
	cd $(KIND_DIR)/images/trainer && $(KIND_GO_BUILD) -ldflags '-s -w' -o $@ github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager

$(JOBSET_BIN): $(KIND_DIR)/images/jobset/go.mod | kind-verify
	cd $(KIND_DIR)/images/jobset && $(KIND_GO_BUILD) -ldflags "-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion=$(JOBSET_VERSION)" -o $@ sigs.k8s.io/jobset

$(KWOK_BIN): $(KWOK_MOD)/go.mod
	cd $(KWOK_MOD) && $(KIND_GO_BUILD) -ldflags '-s -w' -o $@ sigs.k8s.io/kwok/cmd/kwok

$(LOCAL_PATH_BIN): $(KIND_DIR)/images/local-path-provisioner/go.mod
	cd $(KIND_DIR)/images/local-path-provisioner && $(KIND_GO_BUILD) -ldflags '-s -w' -o $@ github.com/rancher/local-path-provisioner

# Debian's busybox-static, and a tar of the links the helper Pod's scripts use.
$(BUSYBOX_BIN):
	@rm -rf $(@D) && mkdir -p $(@D)/links/bin
	cd $(@D) && { apt-get download -q -o APT::Sandbox::User=root busybox-static \
		|| { apt-get update -q && apt-get download -q -o APT::Sandbox::User=root busybox-static; }; }
	dpkg-deb --fsys-tarfile $(@D)/busybox-static_*.deb | tar -xO ./bin/busybox > $@.tmp
	chmod 0755 $@.tmp && mv $@.tmp $@
	for tool in sh mkdir rm; do ln -s busybox $(@D)/links/bin/$$tool; done
	tar -C $(@D)/links -cf $@-links.tar bin
