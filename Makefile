# prism — the two commands of a fresh machine are `make run` and `make test`.
.DEFAULT_GOAL := help
GO ?= go
FUZZTIME ?= 60s
# Bounded minimization: unbounded, minimizing each new input of a target
# whose calls are slow (the zstd frames) can eat the whole fuzz time.
FUZZMINIMIZETIME ?= 100x
# The browser tests drive Debian's Chromium here.
CHROMIUM ?= /usr/bin/chromium
# The accessibility test runs axe-core, pinned and checked against the npm
# registry's sha512 of the package, kept outside the repository.
AXE_VERSION := 4.14.1
AXE_SHA512 := 1477dafa598d8d065f273d6af302aa203c02e83131707b7fa648cd41bd3d6b734f8c22a0dab86ee6a6f64b8afbe804b214d36db85a2826965edfb3a0b9d546b5
AXE_JS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/prism/axe-core-$(AXE_VERSION)/axe.min.js

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

.PHONY: generate
generate: ## produce templ code and the pinned, checksummed datastar client
	$(GO) generate ./...

.PHONY: run
run: generate ## serve the dashboard on 127.0.0.1:8080 with ./prism.db
	$(GO) run . serve

.PHONY: build
build: generate ## build ./prism
	$(GO) build -o prism .

.PHONY: test
test: generate chromium postgresql axe ## every test: go.mod tidy and verified, vet, staticcheck, then all packages with the race detector (PostgreSQL's too)
	$(GO) mod tidy -diff
	$(GO) mod verify
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	PRISM_AXE_JS=$(AXE_JS) $(GO) test -race -count=1 -timeout 20m ./...

.PHONY: chromium
chromium: ## the browser tests' Chromium: installs Debian's package as root, else says how
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "installing chromium for the browser tests (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core; \
	else \
	  echo "the browser tests need $(CHROMIUM): run 'sudo apt-get install chromium', or make test as root" >&2; exit 1; \
	fi

.PHONY: postgresql
postgresql: ## the PostgreSQL tests' server binaries: installs Debian's package as root, else says how
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "installing postgresql for the PostgreSQL tests (apt-get; no cluster is created or started)"; \
	  mkdir -p /etc/postgresql-common && echo 'create_main_cluster = false' >> /etc/postgresql-common/createcluster.conf; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	else \
	  echo "the PostgreSQL tests need initdb and postgres: run 'sudo apt-get install postgresql', or make test as root" >&2; exit 1; \
	fi

.PHONY: cluster
cluster: build postgresql ## two prism nodes on one throwaway PostgreSQL (temp dir), until Ctrl-C
	$(GO) run ./internal/cmd/cluster ./prism

.PHONY: axe
axe: ## the accessibility test's axe-core $(AXE_VERSION): npm pack, sha512 checked, unpacked to AXE_JS
	@if [ -f $(AXE_JS) ]; then :; else \
	  if ! command -v npm >/dev/null; then \
	    if [ "$$(id -u)" = 0 ]; then echo "installing npm for the accessibility test (apt-get)"; \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; \
	    else echo "the accessibility test needs npm: run 'sudo apt-get install npm', or make test as root" >&2; exit 1; fi; \
	  fi; \
	  tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  (cd "$$tmp" && npm pack --silent axe-core@$(AXE_VERSION) >/dev/null) && \
	  echo "$(AXE_SHA512)  $$tmp/axe-core-$(AXE_VERSION).tgz" | sha512sum -c --quiet && \
	  tar -xzf "$$tmp/axe-core-$(AXE_VERSION).tgz" -C "$$tmp" package/axe.min.js && \
	  mkdir -p "$$(dirname $(AXE_JS))" && mv "$$tmp/package/axe.min.js" $(AXE_JS) && \
	  echo "axe-core $(AXE_VERSION) installed at $(AXE_JS)"; \
	fi

.PHONY: check-generated
check-generated: generate ## fail when committed generated code differs from what go generate produces
	@git diff --exit-code --stat -- '*_templ.go' || { echo "the committed *_templ.go files differ from go generate's output: commit the regenerated files" >&2; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- '*_templ.go'); \
	  if [ -n "$$untracked" ]; then echo "generated files not committed: $$untracked" >&2; exit 1; fi

.PHONY: static
static: generate ## build ./prism as the Dockerfile does (static, cgo; .ci/build-static)
	sh .ci/build-static prism

.PHONY: check-static
check-static: ## prove the Dockerfile's build without a container engine (static binary, non-root, empty env, /healthz)
	.ci/check-static

.PHONY: bench
bench: generate ## the benchmarks reported in BENCHMARKS.md
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: bench-growth
bench-growth: generate ## how costs grow: 300 and 3,000 text-heavy sessions (~100k and ~1M events, built once, cached in $TMPDIR/prism-growth)
	$(GO) test -run '^$$' -bench '^BenchmarkGrowth$$' -benchtime 1x -timeout 60m .

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) || exit 1; \
	  done; \
	done
