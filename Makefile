# prism — the two commands of a fresh machine are `make run` and `make test`.
.DEFAULT_GOAL := help
GO ?= go
FUZZTIME ?= 60s
# Bounded minimization: unbounded, minimizing each new input of a target
# whose calls are slow (the zstd frames) can eat the whole fuzz time.
FUZZMINIMIZETIME ?= 100x

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
test: generate ## every test: vet, then all packages with the race detector
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

.PHONY: bench
bench: generate ## the benchmarks reported in the README
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) || exit 1; \
	  done; \
	done
