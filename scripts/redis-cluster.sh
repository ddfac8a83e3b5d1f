#!/usr/bin/env bash
#
# Run a Redis Cluster for tests and local development on this one machine:
# three masters and a replica of each, redis-server processes on 127.0.0.1
# ports 7001-7006 (Debian's redis-server 7), no persistence, each with its
# own directory (pid file, log, nodes.conf) under <repo>/.redis-cluster
# (git-ignored). A node is declared failed after 2 s without an answer, so a
# killed master's replica takes over within a few seconds.
#
# Usage: scripts/redis-cluster.sh COMMAND
#   start            start the six nodes and create the cluster (fresh: any
#                    earlier cluster's state is wiped), wait for cluster_state:ok
#   stop             stop every node
#   url              print the CHAT_REDIS_URL of the cluster (all seed nodes)
#   ports            print the node ports
#   masters          print the ports of the current masters
#   replica-of PORT  print the port of a replica of the master on PORT
#   kill PORT        kill the node on PORT with SIGKILL
#   kill-master PORT kill the master on PORT with SIGKILL and wait until its
#                    replica has taken over: by the cluster's own failover,
#                    or, if that has not happened within 10 s (seen once on a
#                    loaded CI machine), by CLUSTER FAILOVER TAKEOVER on it
#   restart PORT     start the node on PORT again (it rejoins the cluster)
#   wait-ok          wait until every live node reports cluster_state:ok and
#                    every slot is served by a master
#   status           exit 0 iff the cluster answers with cluster_state:ok
#
# Environment (all optional):
#   REDIS_CLUSTER_DIR   where the nodes live   (default: <repo>/.redis-cluster)
#   REDIS_CLUSTER_BASE  first port             (default: 7001)
#
set -euo pipefail

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/.." && pwd -P)"

DIR="${REDIS_CLUSTER_DIR:-$REPO_ROOT/.redis-cluster}"
BASE="${REDIS_CLUSTER_BASE:-7001}"
HOST=127.0.0.1
NODES=6
NODE_TIMEOUT_MS=2000

LOG_TAG=redis-cluster.sh
log() { printf '[%s] %s\n' "$LOG_TAG" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$LOG_TAG" "$*" >&2; exit 1; }

ports() { local i; for ((i = 0; i < NODES; i++)); do echo $((BASE + i)); done; }
cli() { local port=$1; shift; timeout 5 redis-cli -h "$HOST" -p "$port" "$@"; }
pid_of() { [[ -f "$DIR/$1/redis.pid" ]] && tr -d '[:space:]' <"$DIR/$1/redis.pid"; }
alive() {
  local pid
  pid="$(pid_of "$1")" && [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "redis-server.*:$1"
}

start_node() {
  local port=$1
  mkdir -p "$DIR/$port"
  redis-server \
    --port "$port" --bind "$HOST" \
    --cluster-enabled yes \
    --cluster-config-file nodes.conf \
    --cluster-node-timeout "$NODE_TIMEOUT_MS" \
    --save '' --appendonly no \
    --daemonize yes \
    --pidfile "$DIR/$port/redis.pid" \
    --dir "$DIR/$port" \
    --logfile "$DIR/$port/redis.log" ||
    die "redis-server on port $port failed to start (log: $DIR/$port/redis.log)"
  local start=$SECONDS
  until [[ "$(cli "$port" ping 2>/dev/null)" == PONG ]]; do
    ((SECONDS - start < 30)) || die "no PONG from port $port after 30s"
    sleep 0.1
  done
}

stop_node() {
  local port=$1 pid
  pid="$(pid_of "$port")" || return 0
  if alive "$port"; then
    kill -TERM "$pid" 2>/dev/null || true
    local start=$SECONDS
    while alive "$port"; do
      if ((SECONDS - start >= 10)); then kill -KILL "$pid" 2>/dev/null || true; sleep 0.5; break; fi
      sleep 0.1
    done
  fi
  rm -f "$DIR/$port/redis.pid"
}

# cluster_ok PORT: the node sees the cluster as ok, with all 16384 slots served.
cluster_ok() {
  local info
  info="$(cli "$1" cluster info 2>/dev/null)" || return 1
  grep -q '^cluster_state:ok' <<<"$info" && grep -q '^cluster_slots_ok:16384' <<<"$info"
}

cmd_wait_ok() {
  local start=$SECONDS port ok
  while :; do
    ok=1
    for port in $(ports); do
      alive "$port" || continue
      cluster_ok "$port" || { ok=0; break; }
    done
    ((ok)) && return 0
    ((SECONDS - start < 60)) || die "the cluster is not ok after 60s"
    sleep 0.2
  done
}

cmd_start() {
  command -v redis-server >/dev/null 2>&1 || "$SCRIPT_DIR/redis.sh" install
  local gi="$REPO_ROOT/.gitignore"
  [[ "$DIR" != "$REPO_ROOT/.redis-cluster" ]] || grep -qxF '/.redis-cluster/' "$gi" 2>/dev/null ||
    printf '/.redis-cluster/\n' >>"$gi"
  cmd_stop
  rm -rf "$DIR"
  local port addrs=()
  for port in $(ports); do
    start_node "$port"
    addrs+=("$HOST:$port")
  done
  log "creating the cluster: 3 masters, a replica each (${addrs[*]})"
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$DIR/create.log" 2>&1 ||
    { cat "$DIR/create.log" >&2; die "redis-cli --cluster create failed"; }
  cmd_wait_ok
  # Every node must know every other before a failover can be agreed on.
  local start=$SECONDS
  for port in $(ports); do
    until [[ "$(cli "$port" cluster nodes | grep -c connected)" == "$NODES" ]]; do
      ((SECONDS - start < 60)) || die "node $port does not see all $NODES nodes after 60s"
      sleep 0.2
    done
  done
  log "cluster up: masters on $(cmd_masters | tr '\n' ' ')(url: $(cmd_url))"
}

cmd_stop() {
  local port
  for port in $(ports); do stop_node "$port"; done
}

cmd_url() {
  local port first=1 url
  for port in $(ports); do
    if ((first)); then url="redis://$HOST:$port?"; first=0; else url+="&"; fi
    url+="addr=$HOST:$port"
  done
  echo "${url/\?addr=$HOST:$BASE&/?}"
}

cmd_masters() {
  local port
  for port in $(ports); do
    alive "$port" || continue
    cli "$port" cluster nodes | awk '$3 ~ /master/ && $3 !~ /fail/ && $8 == "connected" && NF > 8 {split($2, a, "[:@]"); print a[2]}' | sort -u
    return 0
  done
  die "no node is running"
}

cmd_replica_of() {
  local master=$1 id port
  id="$(cli "$master" cluster myid)" || die "no node on port $master"
  for port in $(ports); do
    alive "$port" || continue
    cli "$port" cluster nodes | awk -v id="$id" '$4 == id && $3 ~ /slave/ && $3 !~ /fail/ {split($2, a, "[:@]"); print a[2]}' | head -n 1
    return 0
  done
}

cmd_kill() {
  local pid
  pid="$(pid_of "$1")" || die "no node on port $1"
  kill -KILL "$pid"
  log "killed the node on port $1 (pid $pid)"
}

cmd_kill_master() {
  local port=$1 replica start
  replica="$(cmd_replica_of "$port")"
  [[ -n "$replica" ]] || die "the node on port $port has no replica"
  cmd_kill "$port"
  start=$SECONDS
  until [[ "$(cli "$replica" role 2>/dev/null | head -n 1)" == master ]]; do
    if ((SECONDS - start == 10)); then
      log "no failover of $port after 10s; CLUSTER FAILOVER TAKEOVER on its replica $replica"
      cli "$replica" cluster failover takeover >/dev/null || true
    fi
    ((SECONDS - start < 40)) || die "the replica $replica did not take over from $port"
    sleep 0.2
  done
  log "the replica $replica took over from $port after $((SECONDS - start))s"
}

cmd_status() {
  local port
  for port in $(ports); do
    alive "$port" && cluster_ok "$port" && { echo "ok: $(cmd_url)"; return 0; }
  done
  echo "not running"
  return 1
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  url) cmd_url ;;
  ports) ports ;;
  masters) cmd_masters ;;
  replica-of) cmd_replica_of "${2:?port}" ;;
  kill) cmd_kill "${2:?port}" ;;
  kill-master) cmd_kill_master "${2:?port}" ;;
  restart) start_node "${2:?port}" ;;
  wait-ok) cmd_wait_ok ;;
  status) cmd_status ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//;$d' >&2; exit 2 ;;
esac
