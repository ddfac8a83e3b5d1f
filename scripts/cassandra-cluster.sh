#!/usr/bin/env bash
#
# A three-node Apache Cassandra 5.0 cluster on this one machine, as Cassandra's
# own ccm runs one: node N listens on the N-th address of CLUSTER_ADDRESSES
# (all of 127.0.0.0/8 is loopback), on the usual ports, with its own home
# under .cassandra/cluster/nodeN, evenly spaced tokens, every node a seed and
# hinted handoff on. Each node is started by scripts/cassandra.sh, from the
# jars it installs in .cassandra/lib.
#
# Usage: scripts/cassandra-cluster.sh COMMAND
#   start            start every node that is not running, one after another
#   stop             stop every node
#   status           exit 0 iff every node answers CQL
#   kill N           SIGKILL node N (1-based), as a crash would
#   pause N          SIGSTOP node N: it holds its connections and answers nothing
#   resume N         SIGCONT node N
#   start-node N     start node N again (after kill)
#   nodetool N ARGS  run nodetool against node N (for example: nodetool 1 repair chat)
#   hosts            print the nodes' addresses, comma-separated
#
# Environment (optional):
#   CLUSTER_ADDRESSES  the nodes' addresses (default: "127.0.0.1 127.0.0.2 127.0.0.3")
#   CLUSTER_HEAP       each node's heap      (default: 1G: three nodes fit a 2-core, 24 GiB box)
#   CLUSTER_HOME       where the nodes live  (default: <repo>/.cassandra/cluster)
#
# The single node of scripts/cassandra.sh listens on 127.0.0.1 too: stop it
# first, or move the cluster (CLUSTER_ADDRESSES="127.0.0.2 127.0.0.3 127.0.0.4").
set -euo pipefail

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/.." && pwd -P)"
read -r -a ADDRESSES <<<"${CLUSTER_ADDRESSES:-127.0.0.1 127.0.0.2 127.0.0.3}"
CLUSTER_HEAP="${CLUSTER_HEAP:-1G}"
CLUSTER_HOME="${CLUSTER_HOME:-$REPO_ROOT/.cassandra/cluster}"
LIB_DIR="$REPO_ROOT/.cassandra/lib"
# Murmur3 tokens spaced evenly over the ring, one per node.
TOKENS=(-9223372036854775808 -3074457345618258603 3074457345618258602)

log() { printf '[cassandra-cluster.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

((${#ADDRESSES[@]} == 3)) || die "CLUSTER_ADDRESSES must name three addresses (got ${#ADDRESSES[@]})"

seeds() {
  local IFS=,
  local s=("${ADDRESSES[@]/%/:7000}")
  printf '%s' "${s[*]}"
}

# node N CMD...: run scripts/cassandra.sh for node N.
node() {
  local n=$1
  shift
  [[ "$n" =~ ^[1-3]$ ]] || die "no node $n: nodes are 1, 2 and 3"
  CASSANDRA_HOME="$CLUSTER_HOME/node$n" \
    CASSANDRA_LIB_DIR="$LIB_DIR" \
    CASSANDRA_LISTEN="${ADDRESSES[n - 1]}" \
    CASSANDRA_SEEDS="$(seeds)" \
    CASSANDRA_INITIAL_TOKEN="${TOKENS[n - 1]}" \
    CASSANDRA_JMX_PORT="$((7200 + n))" \
    CASSANDRA_HEAP="$CLUSTER_HEAP" \
    CASSANDRA_HINTED_HANDOFF=true \
    "$SCRIPT_DIR/cassandra.sh" "$@"
}

pid_of() {
  local f="$CLUSTER_HOME/node$1/cassandra.pid"
  [[ -f "$f" ]] || die "node $1 has no pid file ($f): is it running?"
  tr -d '[:space:]' <"$f"
}

signal() {
  local sig=$1 n=$2 pid
  pid="$(pid_of "$n")"
  kill "-$sig" "$pid"
  log "sent SIG$sig to node $n (pid $pid, ${ADDRESSES[n - 1]})"
  if [[ "$sig" == KILL ]]; then
    rm -f "$CLUSTER_HOME/node$n/cassandra.pid"
  fi
}

nodetool() {
  local n=$1
  shift
  # The JPMS flags of Cassandra 5.0's conf/jvm17-clients.options.
  java -Xmx256m \
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
    --add-exports java.base/jdk.internal.ref=ALL-UNNAMED \
    --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED \
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED \
    --add-exports java.sql/java.sql=ALL-UNNAMED \
    --add-opens java.base/java.lang.module=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED \
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
    --add-opens java.base/java.io=ALL-UNNAMED \
    --add-opens java.base/java.nio=ALL-UNNAMED \
    --add-opens java.base/java.lang=ALL-UNNAMED \
    --add-opens java.base/java.util=ALL-UNNAMED \
    -Dcassandra.logdir="$CLUSTER_HOME" -Dlogback.configurationFile="file://$CLUSTER_HOME/node$n/conf/logback.xml" \
    -cp "$LIB_DIR/*" org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p "$((7200 + n))" "$@"
}

main() {
  local cmd="${1:-}"
  shift || true
  case "$cmd" in
    start)
      "$SCRIPT_DIR/cassandra.sh" install
      for n in 1 2 3; do node "$n" start; done
      log "cluster up: $(IFS=,; echo "${ADDRESSES[*]}")"
      ;;
    stop) for n in 3 2 1; do node "$n" stop || true; done ;;
    status)
      local ok=0
      for n in 1 2 3; do
        printf 'node %s (%s): ' "$n" "${ADDRESSES[n - 1]}"
        node "$n" status || ok=1
      done
      return "$ok"
      ;;
    kill) signal KILL "${1:?node}" ;;
    pause) signal STOP "${1:?node}" ;;
    resume) signal CONT "${1:?node}" ;;
    start-node) node "${1:?node}" start ;;
    nodetool) nodetool "$@" ;;
    hosts) (IFS=,; echo "${ADDRESSES[*]}") ;;
    *) sed -n '10,21p' "$0" >&2; exit 2 ;;
  esac
}

main "$@"
