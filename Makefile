# Basra online — the front door. `make help` lists the targets.

CARGO ?= cargo
# What the tests talk to (README, "Quick start"). Override to point elsewhere.
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres
REDIS_URL ?= redis://127.0.0.1:6379
# A local Redis Cluster (3 primaries, 3 replicas): `make redis-cluster` starts it.
REDIS_CLUSTER_URL ?= redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003
export DATABASE_URL REDIS_URL REDIS_CLUSTER_URL
CARGO_TARGET_DIR_OR_TARGET := $(or $(CARGO_TARGET_DIR),target)


.PHONY: help deps run web web-test api-check api-release play test bench bench-bots analytics-bench lint fmt rules k8s-check fuzz bench-streams release images redis-cluster redis-cluster-stop chaos chaos-short soak sdk chaos-upgrade capacity capacity-long capacity-soak capacity-pods capacity-model bench-events bench-events-short

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

deps: ## Install and start what make test and CI need (Debian/Ubuntu: apt, pip, npm; sudo when not root), then check it
	scripts/deps.sh

run: ## Start the whole backend on its embedded defaults (in-memory stores, one port: 50051) and the web page (8080)
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory web; \
	  else echo "npm not found: the web page is not built (make play works without it)"; fi
	$(CARGO) run --quiet -p basra -- dev

WEB := clients/web
web: ## Build the web client into clients/web/dist (npm ci once; TypeScript from proto/ by buf; esbuild)
	@[ -d $(WEB)/node_modules/@bufbuild/buf ] || npm ci --prefix $(WEB) --no-audit --no-fund --silent
	npm run --prefix $(WEB) --silent build

web-test: ## The web client's unit tests (node --test, after make web): the table's state replaying recorded event logs, the capture rule against the rules tool on 5,000 generated tables, no import cycle
	$(CARGO) build --quiet -p basra-rules
	BASRA_RULES=$(abspath $(CARGO_TARGET_DIR_OR_TARGET))/debug/basra-rules npm test --prefix $(WEB) --silent

BUF := $(WEB)/node_modules/.bin/buf
api-check: ## The API's hygiene (buf.yaml): buf lint (STANDARD) and no breaking change against api/released.binpb
	@[ -x $(BUF) ] || npm ci --prefix $(WEB) --no-audit --no-fund --silent
	$(BUF) lint
	$(BUF) breaking --against api/released.binpb

api-release: ## Record the API as released (api/released.binpb): run when a release ships, commit the file
	@[ -x $(BUF) ] || npm ci --prefix $(WEB) --no-audit --no-fund --silent
	$(BUF) build --exclude-source-info -o api/released.binpb

sdk: ## Client code from proto/ for Java (lite, grpc-java), Kotlin, C#, Objective-C, Python and TypeScript into dist/sdk/<language>/ (docs/clients.md)
	scripts/sdk.sh dist/sdk

play: ## Play in the terminal against the backend of `make run` (second terminal)
	$(CARGO) run --quiet -p basra -- play

rules: ## Run the rules tool: JSON lines on stdin, answers on stdout
	$(CARGO) run --quiet --release -p basra-rules

test: ## Run every test (unit, property, integration, doc, the web client's unit tests and the page in Chromium); checks the prerequisites first (make deps installs them), starts the local Redis Cluster, builds the web page
	@scripts/check-prereqs.sh
	scripts/redis-cluster.sh start
	@[ -d libs/analytics/tests/browser/node_modules/playwright-core ] || npm ci --prefix libs/analytics/tests/browser --no-audit --no-fund --silent
	$(MAKE) --no-print-directory web
	$(MAKE) --no-print-directory web-test
	python3 scripts/capacity_model.py --self-test > /dev/null
	python3 scripts/capacity_fit.py --self-test > /dev/null
	python3 scripts/redis_profile.py --self-test > /dev/null
	$(CARGO) test --workspace --all-targets --no-fail-fast
	$(CARGO) test --workspace --doc

bench-bots: ## The bot levels against each other, 10,000 matches a pairing, hard's budget table, and 500 hard-bot rooms on one replica beside 100 two-player rooms (about 1.5 hours on 2 cores; docs/performance.md, 'Bots')
	$(CARGO) run --quiet --release -p basra-engine --example bot_duel -- levels 10000
	$(CARGO) run --quiet --release -p basra-engine --example bot_duel -- --threads 1 budgets 1000 10,25,50,100,200
	for w in 10 25 50 100 200; do $(CARGO) run --quiet --release -p basra-engine --example bot_duel -- timing 100 --worlds $$w; done
	$(CARGO) build --quiet --release -p game-session --example load
	for bots in 500 0 500 0; do $(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 100 --bot-rooms $$bots --think-ms 1000 --seconds 30 --warmup 5; done

bench: ## Run the benchmarks (figures in docs/performance.md)
	$(CARGO) bench -p basra-engine --bench engine
	$(CARGO) bench -p basra-events --bench events
	$(CARGO) run --quiet --release -p basra-engine --example bot_duel -- duel medium random 10000
	$(CARGO) run --quiet --release -p basra-engine --example bot_duel -- timing 200
	$(CARGO) run --quiet --release -p basra-engine --example capture_worst
	$(CARGO) run --quiet --release -p accounts --example login_bench -- 64 5
	$(CARGO) run --quiet --release -p accounts --example login_bench -- 64 5 2
	$(CARGO) run --quiet --release -p matchmaking --example pairing_bench -- 100000 2000 10
	$(CARGO) build --quiet --release -p game-session --example load
	services/game-session/bench/redis_bench.sh
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 100 --seconds 20
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 1000 --seconds 20 --think-ms 1000
	services/game-session/bench/fixed_comparison.sh
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 1000 --seconds 10
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 1000 --seconds 10 --replica relay
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 1000 --seconds 10 --connections 100
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 1000 --seconds 10 --connections 100 --replica relay
	services/game-session/bench/open_loop.sh $(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 5000 --connections 100 --think-ms 2000-5000 --seconds 10 --warmup 2
	REDIS_URL=memory $(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 1000 --seconds 10
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 250 --seconds 10 --spectators 4
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --join-storm 2000
	$(MAKE) --no-print-directory bench-events-short

bench-streams: ## One replica holding 20,000 paced streams (19,900 connections: the fd limit here is 20,000), then a storm of 19,800 joins, then 40,000 streams on 400 connections as behind a proxy, then 100,000 on 1,000 pausing 5-12 s (docs/performance.md)
	$(CARGO) build --quiet --release -p game-session --example load
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 10000 --connections 19900 --think-ms 3500 --seconds 30 --warmup 5 --idle-seconds 10
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --join-storm 19800
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 20000 --connections 400 --think-ms 2000-5000 --seconds 30 --warmup 5 --idle-seconds 10
	$(CARGO_TARGET_DIR_OR_TARGET)/release/examples/load --matches 50000 --connections 1000 --think-ms 5000-12000 --seconds 30 --warmup 10 --idle-seconds 10

# Events start on time (issue 47): the real service binaries, one replica each, on a
# private PostgreSQL and Redis (tests/events_bench; docs/performance.md, "Events: start on time").
EVENTS_BENCH_PROFILE ?= release
EVENTS_BENCH_DIR := $(CARGO_TARGET_DIR_OR_TARGET)/$(if $(filter dev,$(EVENTS_BENCH_PROFILE)),debug,$(EVENTS_BENCH_PROFILE))
define events_bench_build
	$(CARGO) build --quiet --profile $(EVENTS_BENCH_PROFILE) -p accounts -p game-session -p matchmaking --bins
	$(CARGO) build --quiet --profile $(EVENTS_BENCH_PROFILE) -p basra-e2e --example events_bench
endef

bench-events: ## A knockout of 1,024 and an arena of 4,096 start at their second (every player told on their feed), 1,000 watchers of the knockout see results (docs/performance.md, "Events: start on time")
	$(events_bench_build)
	$(EVENTS_BENCH_DIR)/examples/events_bench --bin-dir $(EVENTS_BENCH_DIR)

bench-events-short: ## The same with 64, 128 and 50 (under a minute once built; part of make bench)
	$(events_bench_build)
	$(EVENTS_BENCH_DIR)/examples/events_bench --bin-dir $(EVENTS_BENCH_DIR) --short

FUZZ_SECONDS ?= 60
FUZZ_TARGETS := engine_actions rules_tool client_messages tokens
fuzz: ## Fuzz each target for FUZZ_SECONDS (cargo-fuzz, nightly; docs/reliability.md, "Fuzzing")
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	cd fuzz && for target in $(FUZZ_TARGETS); do \
		$(CARGO) +nightly fuzz run $$target -- -max_total_time=$(FUZZ_SECONDS) || exit 1; \
	done

# The fault suite and the soak run the real service binaries (docs/reliability.md), built
# with CHAOS_PROFILE (dev: the debug build `make test` already made; release for figures).
CHAOS_PROFILE ?= dev
CHAOS_BIN_DIR := $(CARGO_TARGET_DIR_OR_TARGET)/$(if $(filter dev,$(CHAOS_PROFILE)),debug,$(CHAOS_PROFILE))
CHAOS_FLAGS ?=
MINUTES ?= 30
define chaos_build
	$(CARGO) build --quiet --profile $(CHAOS_PROFILE) -p accounts -p game-session -p matchmaking --bins
	$(CARGO) build --quiet --profile $(CHAOS_PROFILE) -p basra-e2e --example chaos
endef

# The previous release: the commit that last recorded the API as released (make
# api-release), unless PREVIOUS_RELEASE names another; built once into PREVIOUS_DIR, from a
# copy of this build's dependencies (tests/chaos/previous-release.sh).
PREVIOUS_RELEASE ?= $(shell git log -1 --format=%H -- api/released.binpb)
PREVIOUS_DIR ?= $(CARGO_TARGET_DIR_OR_TARGET)/previous-release
define previous_release_build
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR_OR_TARGET) tests/chaos/previous-release.sh $(PREVIOUS_RELEASE) $(PREVIOUS_DIR) $(CHAOS_PROFILE)
endef

chaos: ## The fault suite, long form: 100 matches per scenario, PostgreSQL down 30 s (private stores), 256-player events, the rolling upgrade
	$(chaos_build)
	$(previous_release_build)
	$(CHAOS_BIN_DIR)/examples/chaos --bin-dir $(CHAOS_BIN_DIR) --only abcdefghklmru --old-bin-dir $(PREVIOUS_DIR)/bin $(CHAOS_FLAGS)

chaos-short: ## The fault suite, short form: a few matches per scenario, 16-player events and the rolling upgrade from the previous release, ~5 minutes (CI runs it)
	$(chaos_build)
	$(previous_release_build)
	$(CHAOS_BIN_DIR)/examples/chaos --bin-dir $(CHAOS_BIN_DIR) --short --only abcdefghklmru --old-bin-dir $(PREVIOUS_DIR)/bin $(CHAOS_FLAGS)

chaos-upgrade: ## Only the rolling upgrade from the previous release (accounts on the new schema, mixed game-session replicas)
	$(chaos_build)
	$(previous_release_build)
	$(CHAOS_BIN_DIR)/examples/chaos --bin-dir $(CHAOS_BIN_DIR) --short --only u --old-bin-dir $(PREVIOUS_DIR)/bin $(CHAOS_FLAGS)

soak: ## Bots play through the real services for MINUTES (default 30); RSS, errors, matches, outbox lag
	$(chaos_build)
	$(CHAOS_BIN_DIR)/examples/chaos --bin-dir $(CHAOS_BIN_DIR) --soak $(MINUTES)

# The whole system under simulated players (tests/capacity): the service binaries and the
# simulator built with CAPACITY_PROFILE (release: the figures of docs/performance.md).
CAPACITY_PROFILE ?= release
CAPACITY_BIN_DIR := $(CARGO_TARGET_DIR_OR_TARGET)/$(if $(filter dev,$(CAPACITY_PROFILE)),debug,$(CAPACITY_PROFILE))
CAPACITY_FLAGS ?=
define capacity_build
	$(CARGO) build --quiet --profile $(CAPACITY_PROFILE) -p accounts -p game-session -p matchmaking -p basra-capacity --bins
endef

capacity: ## Whole-system short form: 150 simulated players through every service, ~3 minutes; prints the headline
	$(capacity_build)
	$(CAPACITY_BIN_DIR)/capacity --bin-dir $(CAPACITY_BIN_DIR) --short $(CAPACITY_FLAGS)

capacity-long: ## Whole-system long form: PLAYERS (default 20000) at human pace for 12 minutes (10 measured)
	$(capacity_build)
	$(CAPACITY_BIN_DIR)/capacity --bin-dir $(CAPACITY_BIN_DIR) --players $(or $(PLAYERS),20000) --session-s 1200 --seconds 720 --warmup 120 --ramp-s 300 --connections 400 $(CAPACITY_FLAGS)

capacity-soak: ## The soak: PLAYERS (default 8600, about 13,800 present: 70 % of where the 2 cores fill) for 30 minutes measured after 5 of warm-up; memory start -> end per process in the report
	$(capacity_build)
	$(CAPACITY_BIN_DIR)/capacity --bin-dir $(CAPACITY_BIN_DIR) --players $(or $(PLAYERS),8600) --session-s 1200 --seconds 2100 --warmup 300 --ramp-s 240 --connections 400 $(CAPACITY_FLAGS)

capacity-pods: ## Scale-out: the short form with 1, 2 and 4 game-session replicas, each under a CPU quota of QUOTA cores (default 0.25)
	$(capacity_build)
	for n in 1 2 4; do $(CAPACITY_BIN_DIR)/capacity --bin-dir $(CAPACITY_BIN_DIR) --short --games $$n --game-quota $(or $(QUOTA),0.25) $(CAPACITY_FLAGS) || exit 1; done

capacity-model: ## The capacity model (docs/scaling.md): its predictions before measurement (20,000 players, pods at 1 and 2 cores, 1,000,000 with the deployment and its cost), then the cost curves fitted to the whole-system runs and their checks (MARKDOWN=1: tables for the docs)
	python3 scripts/capacity_model.py --self-test > /dev/null
	python3 scripts/capacity_fit.py --self-test > /dev/null
	python3 scripts/capacity_model.py --players 20000 --quota 1 --quota 2 $(if $(MARKDOWN),--markdown)
	python3 scripts/capacity_model.py --players 1000000 --quota 1 --quota 2 --plan $(if $(MARKDOWN),--markdown)
	python3 scripts/capacity_fit.py --quota 0.25 --quota 1 $(if $(MARKDOWN),--markdown)

redis-cluster: ## Start the local Redis Cluster the tests use (127.0.0.1:7001-7006)
	scripts/redis-cluster.sh start

redis-cluster-stop: ## Stop the local Redis Cluster
	scripts/redis-cluster.sh stop

analytics-bench: ## simulate, export and report 10k and 100k matches (figures in libs/analytics/README.md)
	libs/analytics/bench/bench.sh 10000 100000

lint: ## No link leaving the repository or going nowhere (scripts/check-links.py), no library depending on a service (scripts/check-layers.py), the web client's types (tsc --noEmit, its code and tests), cargo fmt --check, clippy with warnings as errors, the docs (private items too) with no broken or ambiguous intra-doc link
	python3 scripts/check-links.py
	python3 scripts/check-layers.py
	@[ -d $(WEB)/node_modules/typescript ] || npm ci --prefix $(WEB) --no-audit --no-fund --silent
	npm run --prefix $(WEB) --silent generate
	npm run --prefix $(WEB) --silent typecheck
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace --document-private-items

fmt: ## Format the code
	$(CARGO) fmt --all

k8s-check: ## Validate deploy/: render + validate every Kubernetes object, promtool on the alert rules
	python3 deploy/k8s/check.py
	python3 deploy/grafana/dashboards.py --check
	promtool check rules deploy/prometheus/alerts.yaml
	promtool test rules deploy/prometheus/alerts_test.yaml

release: ## Build the release binaries into dist/ exactly as the images do (deploy/docker/release.sh)
	deploy/docker/release.sh dist

TAG ?= latest
IMAGE_PREFIX ?= basra
IMAGE_BUILDER ?= $(shell command -v podman || command -v buildah || command -v docker)
images: ## Build the five images (deploy/docker/Dockerfile) with podman, buildah or docker; TAG=…
	@test -n "$(IMAGE_BUILDER)" || { echo "no podman, buildah or docker here: see deploy/README.md" >&2; exit 1; }
	for target in accounts matchmaking game-session basra web; do \
	  $(IMAGE_BUILDER) build -f deploy/docker/Dockerfile --target $$target -t $(IMAGE_PREFIX)/$$target:$(TAG) . || exit 1; \
	done
