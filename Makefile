# Everyday commands. `make test` needs Go alone; `make test-integration`
# starts a real Cassandra node, a real Redis and a real S3 server (versitygw,
# built by scripts/s3.sh), installs chromium for the browser tests, and runs
# every test against them.
GO              ?= go
CASSANDRA_HOSTS ?= 127.0.0.1
REDIS_URL       ?= redis://127.0.0.1:6379/0
S3_URL          ?= $(shell scripts/s3.sh url)

.PHONY: run test test-integration test-cluster bench fuzz generate check-generated check-clients lint schema-check schema-release services services-stop browser

run:
	$(GO) run .

test:
	$(GO) test -race -timeout 30m ./...

# Regenerate graph/ (and new resolver stubs) from schema/*.graphqls.
generate:
	$(GO) generate ./...

# Fails when graph/ or resolvers/ differ from what the schema generates.
check-generated: generate
	@if [ -n "$$(git status --porcelain -- graph resolvers)" ]; then \
		echo "generated code is stale: run 'make generate' and commit the result"; \
		git status --porcelain -- graph resolvers; exit 1; fi

# The typed TypeScript client (clients/typescript) and the web app against
# the schema: the client's generated types and documents are what GraphQL
# Code Generator makes of schema/ now, it compiles, and every operation of
# the web app's scripts validates against the schema (so a schema change
# that breaks the app fails here). Needs Node and npm.
check-clients:
	npm ci --prefix clients/typescript --no-audit --no-fund
	npm run --prefix clients/typescript --silent generate >/dev/null
	@if [ -n "$$(git status --porcelain -- clients/typescript/src/generated)" ]; then \
		echo "clients/typescript/src/generated is stale: run 'npm run --prefix clients/typescript generate' and commit the result"; \
		git status --porcelain -- clients/typescript/src/generated; exit 1; fi
	npm run --prefix clients/typescript --silent build
	npm run --prefix clients/typescript --silent check-webapp

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "not gofmt-ed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

# The schema's checks, with the npm tools of clients/schema-checks (`npm ci
# --prefix clients/schema-checks` first): graphql-schema-linter with the
# rules of its .graphql-schema-linterrc, then graphql-inspector's diff
# against the last release's schema (schema/release/schema.graphql), which
# fails on a breaking change not listed in
# schema/release/announced-breaks.txt. Description changes are not listed.
# verboseChanges turns off the tool's simplifyChanges, which would hide
# every change to a type under one "implements an interface" (a break
# included).
# SCHEMA (the files checked) is for e2e/schemacheck_test.go, which checks
# that the check fails.
SCHEMA_TOOLS = clients/schema-checks/node_modules/.bin
SCHEMA       ?= schema/*.graphqls
schema-check:
	@test -x $(SCHEMA_TOOLS)/graphql-inspector || { echo "the schema checks need their npm tools: npm ci --prefix clients/schema-checks"; exit 1; }
	$(SCHEMA_TOOLS)/graphql-schema-linter --config-directory clients/schema-checks '$(SCHEMA)'
	$(SCHEMA_TOOLS)/graphql-inspector diff schema/release/schema.graphql '$(SCHEMA)' \
		--rule verboseChanges --rule ignoreDescriptionChanges --rule clients/schema-checks/announced-breaks.js

# Records the schema as the last release's, the baseline of schema-check's
# breaking-change check, and empties the list of announced breaks: run it
# when a release is cut.
schema-release:
	@for f in schema/*.graphqls; do echo "# $$f"; cat "$$f"; echo; done > schema/release/schema.graphql
	@sed -i '/^[^#]/d' schema/release/announced-breaks.txt

services:
	scripts/cassandra.sh start
	scripts/redis.sh start
	scripts/s3.sh start

services-stop:
	-scripts/s3.sh stop
	-scripts/redis.sh stop
	-scripts/cassandra.sh stop

# Every test, with the backends required: a missing service is a failure.
# The services stay up for the next run; the last line says how to stop them.
test-integration: services browser
	@status=0; CHAT_REQUIRE_BACKENDS=1 CHAT_CASSANDRA_HOSTS=$(CASSANDRA_HOSTS) CHAT_REDIS_URL=$(REDIS_URL) CHAT_S3_URL=$(S3_URL) \
		$(GO) test -race -count=1 -timeout 20m ./... || status=$$?; \
	echo "Cassandra, Redis and the S3 server keep running for the next run: 'make services-stop' stops them."; \
	exit $$status

# The failure tests on real clusters, started by the project's scripts and
# stopped afterwards: first on a Redis Cluster (scripts/redis-cluster.sh:
# three masters and their replicas on 127.0.0.1:7001-7006), the broker,
# presence and rate limits, and two instances under load while masters fail
# over on command and are killed; then (e2e/failover_test.go) on a three-node
# Cassandra cluster (scripts/cassandra-cluster.sh, on 127.0.0.1-3 after
# stopping the single node, which uses 127.0.0.1), two chatql instances
# sharing Redis under load while nodes are killed and paused for real, and
# the search conformance tests at replication 3
# (store/cassandra/cluster_search_test.go). The Redis Cluster tests run one
# package at a time: they kill masters.
test-cluster:
	-scripts/cassandra.sh stop
	scripts/redis.sh start
	scripts/redis-cluster.sh start
	@status=0; CHAT_REDIS_CLUSTER_URL=$$(scripts/redis-cluster.sh url) CHAT_REDIS_URL=$(REDIS_URL) \
		$(GO) test -race -p 1 -count=1 -timeout 10m -v -run 'RedisCluster|RedisModes|RedisRegistry' ./broker ./presence ./ratelimit ./e2e || status=$$?; \
	scripts/redis-cluster.sh stop; \
	scripts/cassandra-cluster.sh start || exit 1; \
	CHAT_CASSANDRA_CLUSTER=$$(scripts/cassandra-cluster.sh hosts) CHAT_REDIS_URL=$(REDIS_URL) \
		$(GO) test -p 1 -count=1 -timeout 30m -v -run 'TestFailover|TestClusterSearch' ./e2e ./store/cassandra || status=$$?; \
	scripts/cassandra-cluster.sh stop; exit $$status

# Debian's chromium and an emoji font, for the browser tests (installed when
# missing; needs root). The tests' driver, playwright-core, is an npm package:
# `npm ci --prefix clients/browser` (.ci/run does).
browser:
	scripts/chromium.sh

# The performance profile (BENCHMARKS.md): Go benchmarks of the store and
# broker hot paths, then cmd/chatload against the built server, embedded with
# the in-process broker and then with Redis, with the bare baselines measured
# in the same runs, then one pair of runs beside Centrifugo (built once from
# the module proxy; BENCH_CENTRIFUGO=0 leaves it out), each ratio printed
# beside issue 34's aim. About 8 minutes on 2 cores. Reports in bench-out/.
# `scripts/bench.sh profile` adds CPU and heap profiles of each phase.
bench:
	GO=$(GO) REDIS_URL=$(REDIS_URL) CASSANDRA_HOSTS=$(CASSANDRA_HOSTS) scripts/bench.sh all

# Every fuzz target for FUZZTIME each (10s by default; CI runs them so).
fuzz:
	GO=$(GO) scripts/fuzz.sh
