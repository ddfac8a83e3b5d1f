#!/usr/bin/env bash
#
# The load tool against the production layout on one machine: two chatql
# instances on a three-node Cassandra cluster (RF 3, LOCAL_QUORUM) and a
# Redis Cluster (three masters, a replica each, sharded pub/sub), started by
# the project's scripts. Three runs of cmd/chatload, spread over both
# instances, each on fresh users and rooms:
#
#   steady          nothing fails
#   cassandra-kill  a Cassandra node is killed with SIGKILL 8 s into the
#                   measured window (started again afterwards)
#   redis-kill      a Redis master is killed with SIGKILL 8 s into the
#                   measured window (it comes back as a replica afterwards)
#
# Reports in OUT/<run>/ (report.json, chart.svg, summary.txt). The profile
# is the Cassandra one of `make bench` (200 subscribers over 10 rooms, 200
# posts/s), so the figures sit next to its single-node run.
#
# Usage: scripts/bench-cluster.sh [OUT]      (default OUT: bench-out/cluster)
# Environment: GO (go), DURATION (20s), RATE (200), SUBSCRIBERS (200),
# KEEP_CLUSTERS=1 leaves both clusters running afterwards.
set -euo pipefail

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/.." && pwd -P)"
cd "$REPO_ROOT"
OUT="${1:-bench-out/cluster}"
GO="${GO:-go}"
DURATION="${DURATION:-20s}"
RATE="${RATE:-200}"
SUBSCRIBERS="${SUBSCRIBERS:-200}"

log() { printf '[bench-cluster.sh] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

mkdir -p "$OUT"
log "building chatql and chatload into $OUT"
"$GO" build -o "$OUT/chatql" .
"$GO" build -o "$OUT/chatload" ./cmd/chatload

PIDS=()
stop_all() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ "${KEEP_CLUSTERS:-}" != 1 ]]; then
    scripts/redis-cluster.sh stop || true
    scripts/cassandra-cluster.sh stop || true
  fi
}
trap stop_all EXIT

scripts/redis-cluster.sh start
scripts/cassandra.sh stop || true # the single node uses 127.0.0.1 too
scripts/cassandra-cluster.sh start
HOSTS="$(scripts/cassandra-cluster.sh hosts)"
REDIS_CLUSTER_URL="$(scripts/redis-cluster.sh url)"

# start_instance N: a chatql instance on a free loopback port; sets ADDR.
start_instance() {
  local logf="$OUT/instance-$1.log"
  env CHAT_ADDR=127.0.0.1:0 CHAT_DATA_DIR="$(mktemp -d)" CHAT_BCRYPT_COST=4 CHAT_MAX_CONNS_PER_CLIENT=0 \
    CHAT_RATE_POSTS=0 CHAT_RATE_ROOM_CHANGES=0 CHAT_RATE_DIRECT_MESSAGES=0 \
    CHAT_RATE_SIGNUPS_PER_ADDRESS=0 CHAT_RATE_LOGINS_PER_LOGIN=0 CHAT_RATE_LOGINS_PER_ADDRESS=0 \
    CHAT_STORE=cassandra CHAT_CASSANDRA_HOSTS="$HOSTS" CHAT_CASSANDRA_KEYSPACE=chatql_bench_cluster \
    CHAT_CASSANDRA_REPLICATION=NetworkTopologyStrategy:datacenter1=3 \
    CHAT_REDIS_CLUSTER=true CHAT_REDIS_URL="$REDIS_CLUSTER_URL" \
    CHAT_JWT_SECRET=bench-cluster-not-a-secret-0123456789abcdef \
    "$OUT/chatql" >"$logf" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 600); do
    ADDR="$(sed -n 's/.*msg="chatql serving" playground=http:\/\/\([^/]*\)\/.*/\1/p' "$logf")"
    [[ -n "$ADDR" ]] && return 0
    sleep 0.1
  done
  cat "$logf" >&2
  die "instance $1 did not start"
}
start_instance 1
A="$ADDR"
start_instance 2
B="$ADDR"
log "instances on $A and $B"

# chatload NAME [FAILURE]: FAILURE runs 8 s into the measured window.
load() {
  local name="$1" failure="${2:-}" trigger=""
  mkdir -p "$OUT/$name"
  : >"$OUT/$name/chatload.log"
  if [[ -n "$failure" ]]; then
    # The load starts once the subscriptions are open, after the setup;
    # then 3 s of warm-up, and 8 s of the measured window.
    (until grep -q 'subscribe: ' "$OUT/$name/chatload.log"; do sleep 0.2; done
      sleep 11; log "$name: $failure"; eval "$failure") &
    trigger=$!
  fi
  "$OUT/chatload" -url "http://$A/query,http://$B/query" -label "cluster-$name" \
    -subscribers "$SUBSCRIBERS" -rooms 10 -rate "$RATE" -posters 10 -readers 2 -read-rate 20 \
    -duration "$DURATION" -warmup 3s -idle-subs 0 -server-store cassandra -server-broker redis-cluster \
    -baselines none -out "$OUT/$name" 2> >(tee -a "$OUT/$name/chatload.log" >&2) | tee "$OUT/$name/summary.txt"
  if [[ -n "$trigger" ]]; then wait "$trigger"; fi
}

load steady
load cassandra-kill "scripts/cassandra-cluster.sh kill 3"
scripts/cassandra-cluster.sh start-node 3
MASTER="$(scripts/redis-cluster.sh masters | head -n 1)"
load redis-kill "scripts/redis-cluster.sh kill $MASTER"
scripts/redis-cluster.sh restart "$MASTER"
scripts/redis-cluster.sh wait-ok
log "done: $OUT/{steady,cassandra-kill,redis-kill}/summary.txt"
