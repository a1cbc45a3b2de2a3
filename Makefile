# gitpeer — make help lists the targets.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

GO        ?= go
BIN       := bin/gitpeer
PKGS      := ./...
FUZZTIME  ?= 20s
# The version `gitpeer version` prints: git describe when this is a Git
# checkout (a commit hash, -dirty with uncommitted changes), else "dev".
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The commit `gitpeer version` names as its revision (the build runs with
# -buildvcs=false, so the toolchain records none): empty outside Git.
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -X main.version=$(VERSION) -X main.revision=$(REVISION)
# Never let go fetch a newer toolchain: pinned dependencies build with Go 1.26.
export GOTOOLCHAIN := local
export GOFLAGS     := -buildvcs=false

.PHONY: help
help: ## List the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-z0-9-]+:.*## /{printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# ensure-tool checks that a tool is there ($(1), a shell test) and else installs
# its Debian package $(2) with apt-get (as root, or through passwordless sudo),
# or warns that $(3) skip without it. No comma may appear in the arguments.
define ensure-tool
@$(1) || { \
  if ! command -v apt-get >/dev/null; then \
    echo "WARNING: $(2) not installed and apt-get unavailable: install it for $(3), which skip without it"; \
  elif [ "$$(id -u)" = 0 ]; then \
    echo "$(2) not installed: installing it with apt-get"; \
    { apt-get install -y -qq $(2) >/dev/null || { apt-get update -qq && apt-get install -y -qq $(2) >/dev/null; }; } \
      || { echo "apt-get install $(2) failed: install it by hand for $(3)"; exit 1; }; \
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then \
    echo "$(2) not installed: installing it with sudo apt-get"; \
    { sudo apt-get install -y -qq $(2) >/dev/null || { sudo apt-get update -qq && sudo apt-get install -y -qq $(2) >/dev/null; }; } \
      || { echo "apt-get install $(2) failed: install it by hand for $(3)"; exit 1; }; \
  else \
    echo "WARNING: $(2) not installed: run 'apt-get install -y $(2)' as root; $(3) skip without it"; \
  fi; }
endef

.PHONY: deps
deps: ## Check the tools the build and tests need (go, git, OpenSSH's sshd, GnuPG's gpg), installing sshd and gpg if missing, and download modules
	@command -v $(GO) >/dev/null || { echo "go not found: install Go 1.26 (see go.mod)"; exit 1; }
	@command -v git >/dev/null || { echo "git not found: apt-get install git"; exit 1; }
	@# The SSH transport tests run a real sshd on loopback (test/testgit); with
	@# GITPEER_REQUIRE_SSHD=1 (for CI) they fail instead of skipping when it is missing.
	$(call ensure-tool,command -v sshd >/dev/null || test -x /usr/sbin/sshd,openssh-server,the SSH tests)
	@# The OpenPGP tests verify signatures with real gpg (testgit.NewGnuPG); with
	@# GITPEER_REQUIRE_GPG=1 (for CI) they fail instead of skipping when it is missing.
	$(call ensure-tool,command -v gpg >/dev/null,gnupg,the OpenPGP tests)
	@$(GO) mod download

.PHONY: build
build: deps ## Build bin/gitpeer
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/gitpeer

.PHONY: demo
demo: build ## Two clusters peer through commits in a fresh Git repo (DIR=... to choose where)
	$(BIN) demo $(if $(DIR),--dir $(DIR))

.PHONY: test
# -timeout: go test's default, 10 minutes per package, is what test/attack
# took at a load of 15 on 2 cores (578 s); its waits end on readiness, so
# a loaded machine is slower, not stuck.
test: deps fmt-check vet ## Unit, fuzz-seed and end-to-end tests (real Git repos, git CLI, gpg, sshd and HTTPS Git hosts on loopback): 6-17 minutes on 2 cores
	$(GO) test -count=1 -timeout 20m $(PKGS)

.PHONY: fuzz
# Targets are found by grep rather than `go test -list`, which would compile
# the tests of every package first. Their seeds include the bad-input suites
# (badinput_*_test.go), so each run starts from every known malformed input.
fuzz: ## Run every fuzz target for FUZZTIME each, seeded from the bad-input suites
	@set -e; for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(cat $$dir/*_test.go | sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' | sort -u); do \
	    echo "== $$dir $$f"; $(GO) test $$dir -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s; \
	  done; done

.PHONY: bench
bench: ## Benchmarks (speed and memory targets live here, not in tests)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

.PHONY: bench-daemons
bench-daemons: ## 20 `gitpeer reconcile` daemons, default flags, one repo over loopback HTTP: merge to every peering Ready, failed passes
	$(GO) test -run '^$$' -bench BenchmarkDaemonMesh -benchtime 1x -timeout 30m ./internal/demo -args -daemons 20

.PHONY: bench-contention
bench-contention: ## Meshes of 20 and 50 clusters through one bare repo, reconcilers in turn and all at once: rounds, retries, failed passes, time
	$(GO) test -run '^$$' -bench BenchmarkMesh -benchtime 1x -timeout 120m ./internal/demo -args -mesh 20,50

.PHONY: fmt
fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')

.PHONY: fmt-check
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet: ## go vet
	$(GO) vet $(PKGS)

.PHONY: tidy
tidy: ## go mod tidy (versions are pinned in go.mod: never -u)
	$(GO) mod tidy

.PHONY: clean
clean: ## Remove build output and e2e logs
	rm -rf bin _output

# ---------------------------------------------------------------- container image
# gitpeer's OCI image, built with no container engine (hack/imagebuild,
# internal/imagebuild: go-containerregistry): a static binary
# (CGO_ENABLED=0) as /usr/local/bin/gitpeer, run as 65532:65532, with this
# machine's CA roots (CA_CERTS) and the labels source, revision and
# version. Every timestamp is the commit's time (SOURCE_DATE_EPOCH), so two
# builds of one commit give one digest. Written to _output/image/oci (an
# OCI layout) and _output/image/gitpeer.tar (docker load -i); pushed only
# when IMAGE=registry/repository:tag is given, with the credentials of the
# Docker config (~/.docker/config.json, $DOCKER_CONFIG).
IMAGE       ?=
# The name in the layout and the tarball when IMAGE is not given: the image
# manifests/deploy's Deployment runs.
IMAGE_DEFAULT := gitpeer:dev
IMAGE_ARCH  ?= $(shell $(GO) env GOARCH)
IMAGE_DIR   ?= _output/image
CA_CERTS    ?= /etc/ssl/certs/ca-certificates.crt
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)

.PHONY: image
image: deps ## Build the OCI image into _output/image (no docker or podman needed); IMAGE=registry/repo:tag also pushes it
	@test -n "$(REVISION)" -a -n "$(SOURCE_DATE_EPOCH)" || { echo "make image: no commit to label the image with: run it in a Git checkout, or set REVISION and SOURCE_DATE_EPOCH" >&2; exit 1; }
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(IMAGE_DIR)/gitpeer-linux-$(IMAGE_ARCH) ./cmd/gitpeer
	$(GO) run ./hack/imagebuild -binary $(IMAGE_DIR)/gitpeer-linux-$(IMAGE_ARCH) -arch $(IMAGE_ARCH) \
	  -ca-certs $(CA_CERTS) -version $(VERSION) -revision $(REVISION) -created $(SOURCE_DATE_EPOCH) \
	  -layout $(IMAGE_DIR)/oci -tarball $(IMAGE_DIR)/gitpeer.tar -ref $(or $(IMAGE),$(IMAGE_DEFAULT)) \
	  $(if $(IMAGE),-push $(IMAGE))

# ---------------------------------------------------------------- Helm chart
# manifests/chart, packaged with Helm's Go library (no helm CLI needed), its
# appVersion (the image tag it runs by default) set to VERSION, as make
# image tags the image. manifests/chart_test.go renders it in make test.
.PHONY: chart
chart: ## Package manifests/chart as _output/chart/gitpeer-<chart version>.tgz, appVersion VERSION
	$(GO) run ./hack/chart -chart manifests/chart -app-version $(VERSION) -out _output/chart

# ---------------------------------------------------------------- e2e on real Kubernetes
# Kubernetes and etcd binaries (and Flux's source-controller and
# kustomize-controller, Gitea, and Liqo's components) are built once from the Go module proxy into a cache
# outside the repo (cold: 10-25 min, Flux ~7 more, Gitea ~8 CPU-minutes more, Liqo ~6 more; then skipped); the suite itself runs
# in temp dirs and stops every process it starts.
E2E_CACHE ?= $(or $(GITPEER_E2E_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gitpeer-e2e)
E2E_BIN   := $(E2E_CACHE)/bin
# go test's -timeout for the suites: the waits inside end on readiness, this
# only bounds a run that hangs.
E2E_TIMEOUT ?= 30m
# Where make e2e keeps each step's output, and the components' logs of a
# failed run (emptied at the start of each run; gitignored).
E2E_LOGS  ?= $(or $(GITPEER_E2E_LOGS),$(CURDIR)/_output/e2e-logs)

.PHONY: e2e-tools
e2e-tools: ## Build Kubernetes v1.34.4 (apiserver, controller-manager, kubectl) and etcd v3.6.5 into the e2e cache
	WORK="$(E2E_CACHE)" bash hack/build-k8s-bins.sh kubectl

.PHONY: e2e-flux-tools
e2e-flux-tools: ## Build Flux source-controller v1.9.6 and kustomize-controller v1.9.5, and extract their CRDs, into the e2e cache
	WORK="$(E2E_CACHE)" bash hack/build-flux.sh

.PHONY: e2e-gitea-tools
e2e-gitea-tools: ## Build the Gitea v1.26.0 server (sqlite) into the e2e cache, with the templates and options it reads
	WORK="$(E2E_CACHE)" bash hack/build-gitea.sh

.PHONY: e2e-liqo-tools
e2e-liqo-tools: ## Build Liqo v1.2.0's controller-manager, crd-replicator, virtual-kubelet and webhook, and gitpeer's Liqo driver (hack/liqo-driver), into the e2e cache
	WORK="$(E2E_CACHE)" bash hack/build-liqo.sh

.PHONY: e2e
e2e: ## Real control planes: two clusters peer over HTTP(S) (kubernetes backend), applied by a test and by real Flux; real Liqo v1.2.0 on two more; daemons: Events, leader election; review pull requests on a real Gitea. Logs: E2E_LOGS
	@GO="$(GO)" MAKE="$(MAKE)" E2E_CACHE="$(E2E_CACHE)" E2E_TIMEOUT="$(E2E_TIMEOUT)" GITPEER_E2E_LOGS="$(E2E_LOGS)" \
	  bash hack/e2e.sh
