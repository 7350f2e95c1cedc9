# trainersim Makefile. Versions are pinned in go.mod (Kubeflow Trainer, JobSet,
# controller-runtime, k8s.io/*) and hack/controlplane/go.mod (the Kubernetes
# control plane and KWOK); everything below reads them from there.

SHELL := /usr/bin/env bash -o pipefail
PROJECT_DIR := $(shell pwd)
GO ?= go
# The commit make bench compares simctl with (BenchmarkCorpusAgainstBase):
# main before issue 23's work on the CPU per scenario.
BENCH_BASE ?= 3b4e95a
BIN_DIR := $(PROJECT_DIR)/bin

# The nested modules of hack/ pin what `make assets` builds (hack/assets,
# sim/assetbuild, which simctl assets shares): hack/controlplane the Kubernetes
# control plane, hack/kwok KWOK, hack/kubemark the hollow kubelet, and
# hack/trainer/<version>/, hack/jobset/<version>/ and hack/kueue/<version>/ the
# other Trainer releases (--trainer VERSION), the JobSets they pin and Kueue.
CONTROLPLANE_MOD := $(PROJECT_DIR)/hack/controlplane
KWOK_MOD := $(PROJECT_DIR)/hack/kwok
K8S_VERSION := $(shell sed -n 's/^require k8s.io\/kubernetes v//p;s/^\tk8s.io\/kubernetes v\([^ ]*\).*/\1/p' $(CONTROLPLANE_MOD)/go.mod | head -n1)
TRAINER_RELEASES := $(notdir $(wildcard $(PROJECT_DIR)/hack/trainer/v*))
KUEUE_RELEASES := $(notdir $(wildcard $(PROJECT_DIR)/hack/kueue/v*))
# The release simctl runs (releases.KueueVersion): the one the kind provider
# installs from its manifests (fixtures/install/kueue.yaml) and image.
KUEUE_VERSION := $(shell sed -n 's/^const KueueVersion = "\(v[^"]*\)"$$/\1/p' $(PROJECT_DIR)/sim/releases/versions.go)

SIMCTL := $(BIN_DIR)/simctl
# The ginkgo CLI, at the version go.mod pins: make test runs sim/e2e's specs
# under ginkgo -p, E2E_PROCS processes, each with a cluster of its own.
GINKGO := $(BIN_DIR)/ginkgo
E2E_PROCS ?= 2
# The label of sim/e2e's specs that make test leaves to make test-paths.
OTHER_PATHS := other-paths
REPORT_DIR ?= $(PROJECT_DIR)/reports/out

# TRAINER_DIR=../trainer builds simctl against a local checkout of Kubeflow
# Trainer instead of the pinned release, through a go.work file in bin/ (go.mod
# is never edited): make run TRAINER_DIR=../trainer. The checkout runs as newer
# than the release it descends from, which hack/checkoutversion finds in its
# git tags or module version and compiles in (TRAINER_AS=vX.Y.Z gives another).
ifneq ($(TRAINER_DIR),)
TRAINER_ABS := $(abspath $(TRAINER_DIR))
export GOWORK := $(BIN_DIR)/trainer.go.work
TRAINER_X = -X 'github.com/trainersim/trainersim/sim/releases.trainerCheckout=$$(GOWORK=off $(GO) run ./hack/checkoutversion $(TRAINER_ABS))'
endif
ifneq ($(TRAINER_AS),)
export TRAINERSIM_TRAINER_AS := $(TRAINER_AS)
endif

# KUEUE_DIR=../kueue runs the Kueue component built from a local checkout of
# Kueue instead of the pinned release: make build (and make test) builds its
# manager and copies its CRDs, webhooks and RBAC into bin/kueue/checkout/
# (target kueue-checkout), and compiles into simctl where they are and the
# release the checkout descends from: make run KUEUE_DIR=../kueue.
ifneq ($(KUEUE_DIR),)
KUEUE_ABS := $(abspath $(KUEUE_DIR))
KUEUE_CHECKOUT_DIR := $(BIN_DIR)/kueue/checkout
KUEUE_X = -X 'github.com/trainersim/trainersim/sim/releases.kueueCheckout=$$(GOWORK=off $(GO) run ./hack/checkoutversion $(KUEUE_ABS));bin=$(KUEUE_CHECKOUT_DIR)'
endif
# The -ldflags of simctl and of the test binaries: what the checkouts are.
CHECKOUT_LDFLAGS = $(if $(TRAINER_DIR)$(KUEUE_DIR),-ldflags "$(TRAINER_X) $(KUEUE_X)")
CHECKOUTS = $(if $(TRAINER_DIR),trainer-workspace) $(if $(KUEUE_DIR),kueue-checkout)

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Set-up

MAKE_START := $(shell date +%s)
elapsed = t=$$(( $$(date +%s) - $(MAKE_START) )); printf '[%dm%02ds] %s\n' $$((t / 60)) $$((t % 60)) "$(1)"

# Each build is a go build in a copy of its module of hack/ (static, as
# upstream builds them: the kind node image's build of the same packages,
# hack/kind, then compiles nothing again); one that has not changed since it
# last ran (bin/.builds/ keeps its key) does not run again.
.PHONY: assets
assets: ## Build kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok into bin/k8s/<version>/, Kueue into bin/kueue/ (what make run needs: first), then the other Trainer releases' managers into bin/trainer/ and bin/jobset/ and the hollow kubelet; prints a line per build with the time so far and an estimate of what is left.
	$(GO) run ./hack/assets --dir $(BIN_DIR) --all

# run-assets are the binaries the default corpus needs (make run, make shake):
# the control plane, KWOK, Kueue and the Trainer releases (with their JobSets)
# the corpus's upgrade scenarios name; the other release's too when TRAINER
# names one.
.PHONY: run-assets
run-assets:
	$(GO) run ./hack/assets --dir $(BIN_DIR) $(if $(TRAINER),--trainer $(TRAINER))

# Kueue's manager alone (the kind images take its binary).
$(BIN_DIR)/kueue/%/kueue:
	$(GO) run ./hack/assets --dir $(BIN_DIR) --only kueue-$*

$(GINKGO): go.mod
	$(GO) build -o $@ github.com/onsi/ginkgo/v2/ginkgo

##@ Generated files

# A module's directory in the module cache, downloaded first: make expands a
# recipe's lines before it runs the first, so the recipe cannot download it.
module_dir = $(shell $(GO) mod download $(1) && $(GO) list -m -f '{{.Dir}}' $(1))
TRAINER_ROOT = $(call module_dir,github.com/kubeflow/trainer/v2)
JOBSET_ROOT = $(call module_dir,sigs.k8s.io/jobset)
SCHEDULER_PLUGINS_ROOT = $(call module_dir,sigs.k8s.io/scheduler-plugins)
KUEUE_ROOT = $(shell cd $(PROJECT_DIR)/hack/kueue/$(KUEUE_VERSION) && $(GO) mod download sigs.k8s.io/kueue && $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
DEFAULT_RUNTIMES := deepspeed_distributed.yaml jax_distributed.yaml mlx_distributed.yaml \
	torch_distributed.yaml xgboost_distributed.yaml torchtune/llama3_2/llama3_2_1B.yaml \
	torchtune/llama3_2/llama3_2_3B.yaml torchtune/qwen2_5/qwen2_5_1.5B.yaml

.PHONY: fixtures
fixtures: $(if $(TRAINER_DIR),trainer-workspace) ## Copy CRDs, webhook manifests and default runtimes from the module cache into fixtures/.
	$(GO) mod download github.com/kubeflow/trainer/v2 sigs.k8s.io/jobset sigs.k8s.io/scheduler-plugins
	rm -rf fixtures/crds fixtures/webhooks fixtures/runtimes fixtures/install
	mkdir -p fixtures/crds/trainer fixtures/crds/jobset fixtures/crds/scheduler-plugins fixtures/webhooks fixtures/runtimes
	install -m 0644 $(TRAINER_ROOT)/manifests/base/crds/trainer.kubeflow.org_*.yaml fixtures/crds/trainer/
	install -m 0644 $(JOBSET_ROOT)/config/components/crd/bases/*.yaml fixtures/crds/jobset/
	install -m 0644 $(SCHEDULER_PLUGINS_ROOT)/manifests/coscheduling/crd.yaml fixtures/crds/scheduler-plugins/
	$(GO) run ./hack/manifests -webhooks $(TRAINER_ROOT)/manifests/base/webhook > fixtures/webhooks/trainer.yaml
	install -m 0644 $(JOBSET_ROOT)/config/components/webhook/manifests.yaml fixtures/webhooks/jobset.yaml
	for f in $(DEFAULT_RUNTIMES); do install -m 0644 $(TRAINER_ROOT)/manifests/base/runtimes/$$f fixtures/runtimes/$$(basename $$f); done
	mkdir -p fixtures/install
	$(GO) run ./hack/manifests $(TRAINER_ROOT) $(JOBSET_ROOT) > fixtures/install/trainer-manager.yaml
	$(GO) run ./hack/manifests -kueue $(KUEUE_ROOT) > fixtures/install/kueue.yaml
	mkdir -p fixtures/install/kueue-e2e
	$(GO) run ./hack/manifests -jobset $(JOBSET_ROOT) > fixtures/install/kueue-e2e/jobset.yaml
	$(GO) run ./hack/manifests -trainer-without-jobset $(TRAINER_ROOT) > fixtures/install/kueue-e2e/trainer.yaml
	$(GO) run ./hack/manifests -kueue-e2e $(KUEUE_ROOT) > fixtures/install/kueue-e2e/kueue.yaml
	rm -rf fixtures/rbac
	mkdir -p fixtures/rbac
	$(GO) run ./hack/manifests -rbac $(TRAINER_ROOT) $(JOBSET_ROOT) > fixtures/rbac/trainer-manager.yaml
	# KWOK's module is hack/kwok's dependency: downloaded first, as on a
	# machine whose module cache is empty (go list -m gives no Dir then).
	kwok=$$(cd $(KWOK_MOD) && $(GO) mod download sigs.k8s.io/kwok && $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/kwok) && test -n "$$kwok" && \
		$(GO) run ./hack/manifests -rbac $$kwok/kustomize/kwok > fixtures/rbac/kwok.yaml
	install -m 0644 hack/local-path/rbac.yaml fixtures/rbac/local-path-provisioner.yaml
	install -m 0644 hack/kwok/volumes-rbac.yaml fixtures/rbac/kwok-volumes.yaml
	rm -rf fixtures/releases
	for v in $(TRAINER_RELEASES); do hack/trainer/fixtures.sh $$v fixtures/releases/$$v $(SCHEDULER_PLUGINS_ROOT) $(DEFAULT_RUNTIMES) || exit 1; done
	rm -rf fixtures/components
	for v in $(KUEUE_RELEASES); do hack/kueue/fixtures.sh $$v fixtures/components/kueue/$$v || exit 1; done

.PHONY: generate
generate: ## Write the scenario schema, docs/scenario-reference.md and the corpus table of docs/corpus.md.
	$(GO) run ./hack/schemagen
	$(GO) run ./hack/corpustable

.PHONY: update
update: generate ## Rewrite every generated file and golden file (schema, reference, corpus table, command pages, testdata/ goldens, simctl's copies of hack/'s build modules) from the code.
	UPDATE_GOLDEN=1 $(GO) test ./fakegpu/ ./sim/explain/ ./sim/migrate/ ./reports/ ./sim/assetbuild/
	UPDATE_GOLDEN=1 $(GO) test ./cmd/simctl/app/ -run 'TestCommandPages'

# golangci-lint, built from the version hack/lint/go.mod pins.
GOLANGCI_LINT := $(BIN_DIR)/golangci-lint

$(GOLANGCI_LINT): hack/lint/go.mod hack/lint/go.sum
	@mkdir -p $(BIN_DIR)
	cd hack/lint && $(GO) build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Check the import and style rules of .golangci.yml (STYLE.md's that a linter can check).
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: fixtures kind-verify lint ## Fail when generated files drift from go.mod or the API types, a scenario does not lint, or .golangci.yml's rules are broken.
	@git diff --exit-code --stat -- fixtures && test -z "$$(git ls-files --others --exclude-standard -- fixtures)" \
		|| { echo "fixtures/ is out of date with go.mod: run 'make fixtures' and commit"; git ls-files --others --exclude-standard -- fixtures; exit 1; }
	$(GO) vet ./...
	$(GO) run ./hack/schemagen -check
	$(GO) run ./hack/corpustable -check
	$(GO) run ./cmd/simctl lint scenarios/ scenarios/scale/ sim/e2e/testdata/ sim/kinde2e/testdata/
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

##@ Build, run, test

.PHONY: build
build: $(CHECKOUTS) ## Build bin/simctl (TRAINER_DIR=... against a local Trainer checkout; KUEUE_DIR=... with Kueue from a local checkout).
	@$(call elapsed,building bin/simctl (the Trainer and JobSet compiled in))
	$(GO) build $(CHECKOUT_LDFLAGS) -o $(SIMCTL) ./cmd/simctl
	@$(SIMCTL) version

.PHONY: trainer-workspace
trainer-workspace:
	@test -f $(TRAINER_ABS)/go.mod || { echo "TRAINER_DIR=$(TRAINER_DIR) has no go.mod"; exit 2; }
	@grep -q '^module github.com/kubeflow/trainer/v2$$' $(TRAINER_ABS)/go.mod || { echo "TRAINER_DIR=$(TRAINER_DIR) is not github.com/kubeflow/trainer/v2"; exit 2; }
	@mkdir -p $(BIN_DIR)
	@printf 'go 1.26.0\n\nuse (\n\t%s\n\t%s\n)\n' "$(PROJECT_DIR)" "$(TRAINER_ABS)" > $(GOWORK)
	@echo "building against the trainer in $(TRAINER_ABS) ($(GOWORK))"

.PHONY: kueue-checkout
kueue-checkout:
	@grep -qs '^module sigs.k8s.io/kueue$$' $(KUEUE_ABS)/go.mod || { echo "KUEUE_DIR=$(KUEUE_DIR) is not a Kueue checkout: it has no go.mod of module sigs.k8s.io/kueue"; exit 2; }
	@echo "building Kueue from the checkout in $(KUEUE_ABS) into $(KUEUE_CHECKOUT_DIR)"
	@rm -rf $(KUEUE_CHECKOUT_DIR) && mkdir -p $(KUEUE_CHECKOUT_DIR)
	cd $(KUEUE_ABS) && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath \
		-ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$$(cd $(PROJECT_DIR) && GOWORK=off $(GO) run ./hack/checkoutversion -field describe $(KUEUE_ABS))" \
		-o $(KUEUE_CHECKOUT_DIR)/kueue ./cmd/kueue
	GOWORK=off hack/kueue/fixtures.sh --dir $(KUEUE_ABS) $(KUEUE_CHECKOUT_DIR)

.PHONY: run
run: run-assets build ## Run every scenario under scenarios/ on one cluster; reports in reports/out (TRAINER=v2.1.0: on that Trainer release; TRAINER_DIR=../trainer, KUEUE_DIR=../kueue: on checkouts, TRAINER_AS=vX.Y.Z the Trainer's release).
	$(SIMCTL) run scenarios/ --report-dir $(REPORT_DIR) $(if $(TRAINER),--trainer $(TRAINER)) $(if $(TRAINER_AS),--trainer-as $(TRAINER_AS))

.PHONY: smoke
smoke: run-assets build ## Start the cluster, run one GPU TrainJob end to end, shut down.
	$(SIMCTL) smoke

.PHONY: up
up: run-assets build ## Start the cluster and keep it up until Ctrl-C (kubeconfig in bin/kubeconfig).
	$(SIMCTL) up --kubeconfig $(BIN_DIR)/kubeconfig

.PHONY: test
test: run-assets $(CHECKOUTS) $(GINKGO) ## Run the unit tests, the corpus as e2e-framework features and the e2e specs of simctl's contract (ginkgo -p, E2E_PROCS processes); TRAINER_DIR=..., KUEUE_DIR=...: against local checkouts.
	$(GO) test $(CHECKOUT_LDFLAGS) $$($(GO) list ./... | grep -v '/sim/e2e$$') -timeout 30m
	$(GINKGO) -p --procs=$(E2E_PROCS) $(CHECKOUT_LDFLAGS) --timeout 30m ./sim/e2e

# make test-paths runs the e2e specs of the paths make test leaves out (label
# other-paths in sim/e2e): other Trainer releases, local checkouts, the corpus's
# round trip (its imports replayed plain and shaken), an import minimised, a new
# finding of explore minimised.
.PHONY: test-paths
test-paths: assets $(GINKGO) ## Run the e2e specs of the other paths: other Trainer releases, TRAINER_DIR/KUEUE_DIR checkouts, the corpus's round trip (record, import, replay plain and shaken), minimize, explore --minimize.
	@rm -f reports/roundtrip/differences.txt
	$(GINKGO) -p --procs=$(E2E_PROCS) --label-filter=$(OTHER_PATHS) --timeout 40m ./sim/e2e \
		|| { cat reports/roundtrip/differences.txt 2>/dev/null; exit 1; }

# make test-kubelet runs the kubelet differential (label kubelet-differential
# in sim/e2e): the corpus's scenarios with kubelet behaviour and the generated
# refusal cases on simctl's simulated kubelet and on hollow kubelets (the
# kubelet's own code), side by side; a verdict that differs fails it, printed
# last.
.PHONY: test-kubelet
test-kubelet: assets $(GINKGO) ## The kubelet differential: scenarios/kubelet/, every scenario with a lifecycle rule or kubelet step and the generated refusal cases (sim/kubeletcases) on the simulated kubelet and on hollow kubelets; fails on a verdict that differs.
	@rm -f reports/kubelet/differences.txt
	$(GINKGO) -v --label-filter=kubelet-differential --timeout 20m ./sim/e2e \
		|| { cat reports/kubelet/differences.txt 2>/dev/null; exit 1; }

.PHONY: test-kind
test-kind: assets kind-images ## The kind suite: the corpus on kind against envtest (same verdicts), a SIGKILLed kind run cleaned, bad input.
	$(GO) test -tags kind ./sim/kinde2e/ -timeout 60m -ginkgo.v \
		|| { cat reports/kind/differences.txt 2>/dev/null; exit 1; }

# make test-upstream runs other projects' e2e suites, unchanged, against
# clusters simctl up starts (hack/upstream): each built from the module cache
# at the version go.mod pins; it prints passed, failed and the specs that
# cannot run here with the reason, and fails when a runnable spec fails.
UPSTREAM_SUITES ?= trainer,jobset,kueue

.PHONY: test-upstream
test-upstream: assets build kind-images ## Run upstream e2e suites (UPSTREAM_SUITES, default all three) against clusters simctl up starts; figures in reports/upstream/summary.txt.
	$(GO) run ./hack/upstream -simctl $(SIMCTL) -report-dir $(PROJECT_DIR)/reports/upstream -suites $(UPSTREAM_SUITES)

# make shake runs the corpus SHAKE times (default 2, one mirrored pair of
# seeds) with the shaker's delays and fails on any order-dependent scenario;
# SHAKE_SEED fixes the first seed (CI's is fixed), otherwise each run draws one.
SHAKE ?= 2
SHAKE_SEED ?=

.PHONY: shake
shake: run-assets build ## Run the corpus SHAKE times (default 2) with seeded delays on every write; fail on order-dependent scenarios; reports in reports/shake/.
	$(SIMCTL) run --shake $(SHAKE) $(if $(SHAKE_SEED),--shake-seed $(SHAKE_SEED)) scenarios/ --report-dir $(PROJECT_DIR)/reports/shake

# make explore runs a bounded explore of the corpus (simctl explore --help):
# the first EXPLORE_PLANS plans, round robin over the scenarios (the same
# plans every time for the same corpus), and fails on a confirmed finding
# that no scenario of scenarios/found/ states. Then the plans of the findings
# kept in scenarios/found/ run again, each from the scenario it was found in,
# and it fails on one that is not found again (LOST).
EXPLORE_PLANS ?= 40

.PHONY: explore
explore: run-assets build ## Explore the corpus, bounded: its first EXPLORE_PLANS plans (default 40), a component restarted, down or restarted onto a stale list around a write; fail on a confirmed finding scenarios/found/ does not hold; then find each finding of scenarios/found/ again from its scenario; reports in reports/explore/ and reports/explore-found/.
	$(SIMCTL) explore scenarios/ --plans $(EXPLORE_PLANS) --known scenarios/found -o $(PROJECT_DIR)/reports/explore
	$(SIMCTL) explore scenarios/ --kind restart,down,stale,flip --found scenarios/found -o $(PROJECT_DIR)/reports/explore-found

# make soak runs the corpus SOAK times in a row, each on a cluster of its own,
# and hack/soak prints every scenario whose verdict changed between runs.
SOAK ?= 20
SOAK_DIR ?= $(PROJECT_DIR)/reports/soak

.PHONY: soak
soak: run-assets build ## Run the corpus SOAK times in a row (default 20) and report every verdict that changed; reports in reports/soak/.
	@rm -rf $(SOAK_DIR) && mkdir -p $(SOAK_DIR)
	@for i in $$(seq 1 $(SOAK)); do \
		$(SIMCTL) run scenarios/ --report-dir $(SOAK_DIR)/$$i > $(SOAK_DIR)/$$i.log 2>&1; \
		echo "soak run $$i of $(SOAK): $$(grep -E '^[0-9]+ passed' $(SOAK_DIR)/$$i.log)"; \
	done
	$(GO) run ./hack/soak $$(for i in $$(seq 1 $(SOAK)); do echo $(SOAK_DIR)/$$i; done)

# The benchmark log make bench appends to, and the tool that keeps it.
BENCH_LOG := $(PROJECT_DIR)/bench/results.jsonl
BENCHLOG := $(BIN_DIR)/benchlog

$(BENCHLOG): $(wildcard hack/benchlog/*.go)
	@mkdir -p $(BIN_DIR)
	$(GO) build -o $@ ./hack/benchlog

.PHONY: bench
bench: assets $(BENCHLOG) ## Measure: bare envtest against the full harness start (5 runs each, alternating: the medians and their ratio); hollow kubelets joining (3 runs); the whole corpus, start included, at the default --parallel and at 4, 6, 12 and 16; CPU profiles of the API server and of simctl over one corpus run, by area of their work; the corpus's scenarios without views on a cluster without views and with every component viewable (the CPU ratio); the warm re-run on a kept cluster; simctl explore of three scenarios (plans a minute, and what a plan adds to its scenario's run); five corpus scenarios on a kept cluster with this tree's simctl and BENCH_BASE's (3 runs each); simctl run scenarios/ with this tree's simctl and BENCH_BASE's side by side (2 runs each); simctl import of a 1 GiB audit log. Every figure is appended to bench/results.jsonl with its commit, time and machine.
	$(GO) test ./sim/providers/envtest/ -run '^$$' -bench 'Start$$' -benchtime 5x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)
	$(GO) test ./sim/providers/envtest/ -run '^$$' -bench 'HollowNode$$' -benchtime 3x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)
	$(GO) test ./sim/runner/ -run '^$$' -bench 'Corpus$$' -benchtime 1x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)
	$(GO) test ./sim/runner/ -run '^$$' -bench 'CorpusProfile$$' -benchtime 1x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)
	$(GO) test ./sim/runner/ -run '^$$' -bench 'CorpusViews$$' -benchtime 1x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)
	$(GO) test ./sim/runner/ -run '^$$' -bench CorpusParallel -benchtime 1x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)
	$(GO) test ./cmd/simctl/app/ -run '^$$' -bench WarmRerun -benchtime 5x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)
	$(GO) test ./cmd/simctl/app/ -run '^$$' -bench 'Explore$$' -benchtime 1x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)
	BENCH_BASE=$(BENCH_BASE) $(GO) test ./cmd/simctl/app/ -run '^$$' -bench KeptCluster -benchtime 3x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)
	BENCH_BASE=$(BENCH_BASE) $(GO) test ./cmd/simctl/app/ -run '^$$' -bench CorpusAgainstBase -benchtime 2x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)
	$(GO) test ./sim/auditimport/ -run '^$$' -bench Import -benchtime 1x -timeout 30m | $(BENCHLOG) record -log $(BENCH_LOG)

.PHONY: bench-scale
bench-scale: assets $(BENCHLOG) ## Measure the fleets of scenarios/scale (10, 100 and 1,000 simulated GPU nodes; 10, 50 and 500 TrainJobs; the real Kueue): time to every Pod Running, CPU and peak memory of each process, the growth from one fleet to the next, and each fleet at rest for 30 s after its run with the growth without the Lease renewals.
	$(GO) test ./sim/runner/ -run '^$$' -bench 'Scale$$' -benchtime 1x -timeout 60m | $(BENCHLOG) record -log $(BENCH_LOG)

.PHONY: bench-report
bench-report: $(BENCHLOG) ## Draw each Speed target's figure over the runs of make bench logged in bench/results.jsonl into docs/bench/<target>.svg, and print the latest figure of each.
	$(BENCHLOG) report -log $(BENCH_LOG) -out docs/bench

##@ kind

include $(PROJECT_DIR)/hack/kind/kind.mk
