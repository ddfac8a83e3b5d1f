#!/usr/bin/env bash
#
# Run a real single-node Apache Cassandra 5.0.x for tests, without Docker and
# without a Debian package. Cassandra and its runtime dependencies are fetched
# from Maven Central (org.apache.cassandra:cassandra-all) into $CASSANDRA_HOME/lib
# and org.apache.cassandra.service.CassandraDaemon is started directly on the JDK.
#
# Usage: scripts/cassandra.sh {install|start|stop|restart|status}
#
# Environment (all optional):
#   CASSANDRA_HOME            install/runtime dir      (default: <repo>/.cassandra, git-ignored)
#   CASSANDRA_PORT            CQL native port          (default: 9042)
#   CASSANDRA_STORAGE_PORT    inter-node storage port  (default: 7000)
#   CASSANDRA_JMX_PORT        local-only JMX port      (default: unset = JMX disabled)
#   CASSANDRA_HEAP            -Xms/-Xmx value          (default: 1G)
#   CASSANDRA_START_TIMEOUT   seconds to wait for CQL  (default: 180)
#   CASSANDRA_STOP_TIMEOUT    seconds before SIGKILL   (default: 60)
#   CASSANDRA_JVM_EXTRA_OPTS  extra JVM flags (word-split)
#   CASSANDRA_LISTEN          address of the node      (default: 127.0.0.1)
#   CASSANDRA_SEEDS           seed list, host:port,... (default: this node)
#   CASSANDRA_INITIAL_TOKEN   the node's token         (default: 0)
#   CASSANDRA_LIB_DIR         where the jars are       (default: $CASSANDRA_HOME/lib)
#   CASSANDRA_HINTED_HANDOFF  true to keep hints for a node that is down (default: false)
# scripts/cassandra-cluster.sh sets the last five to run several nodes.
#   CASSANDRA_MVN_ARGS        extra Maven flags for install (word-split)
#   JAVA_HOME                 JDK to use ($JAVA_HOME/bin/java, else `java` on PATH); JDK 17+
#
set -euo pipefail

# Pinned Cassandra version (must be a 5.0.x published on Maven Central).
CASSANDRA_VERSION="5.0.9"
# Pinned maven-dependency-plugin (Maven 3.8's default binding is too old).
MVN_DEPENDENCY_PLUGIN_VERSION="3.8.1"

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/.." && pwd -P)"

CASSANDRA_HOME="${CASSANDRA_HOME:-$REPO_ROOT/.cassandra}"
CASSANDRA_PORT="${CASSANDRA_PORT:-9042}"
CASSANDRA_STORAGE_PORT="${CASSANDRA_STORAGE_PORT:-7000}"
CASSANDRA_JMX_PORT="${CASSANDRA_JMX_PORT:-}"
CASSANDRA_HEAP="${CASSANDRA_HEAP:-1G}"
CASSANDRA_START_TIMEOUT="${CASSANDRA_START_TIMEOUT:-180}"
CASSANDRA_STOP_TIMEOUT="${CASSANDRA_STOP_TIMEOUT:-60}"
CASSANDRA_LISTEN="${CASSANDRA_LISTEN:-127.0.0.1}"
CASSANDRA_SEEDS="${CASSANDRA_SEEDS:-$CASSANDRA_LISTEN:$CASSANDRA_STORAGE_PORT}"
CASSANDRA_INITIAL_TOKEN="${CASSANDRA_INITIAL_TOKEN:-0}"
CASSANDRA_HINTED_HANDOFF="${CASSANDRA_HINTED_HANDOFF:-false}"

if [[ -n "${JAVA_HOME:-}" ]]; then
  JAVA="$JAVA_HOME/bin/java"
else
  JAVA="java"
fi

LIB_DIR="${CASSANDRA_LIB_DIR:-$CASSANDRA_HOME/lib}"
CONF_DIR="$CASSANDRA_HOME/conf"
DATA_DIR="$CASSANDRA_HOME/data"
LOG_DIR="$CASSANDRA_HOME/logs"
PID_FILE="$CASSANDRA_HOME/cassandra.pid"
VERSION_MARKER="$LIB_DIR/.cassandra-version"
SYSTEM_LOG="$LOG_DIR/system.log"
STDOUT_LOG="$LOG_DIR/stdout.log"

LOG_TAG=cassandra.sh SERVICE_DIR="$CASSANDRA_HOME"
# shellcheck source=scripts/lib.sh
source "$SCRIPT_DIR/lib.sh"

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

check_java() {
  command -v "$JAVA" >/dev/null 2>&1 || die "java not found (JAVA_HOME=${JAVA_HOME:-unset}); JDK 17+ is required"
  local ver major
  ver="$("$JAVA" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')"
  major="${ver%%.*}"
  [[ "$major" =~ ^[0-9]+$ ]] || die "could not determine Java version from '$JAVA -version' (got '$ver')"
  if ((major < 17)); then
    die "Cassandra $CASSANDRA_VERSION needs JDK 17 here; found Java $ver at $JAVA"
  fi
}

is_installed() {
  [[ -f "$VERSION_MARKER" ]] &&
    [[ "$(cat "$VERSION_MARKER")" == "$CASSANDRA_VERSION" ]] &&
    [[ -f "$LIB_DIR/cassandra-all-$CASSANDRA_VERSION.jar" ]]
}

jamm_jar() {
  local j
  for j in "$LIB_DIR"/jamm-*.jar; do
    [[ -f "$j" ]] && { printf '%s\n' "$j"; return 0; }
  done
  return 1
}

# True if $1 is a live process that is (or is about to exec) our CassandraDaemon.
# The /proc check guards against a stale pid file whose pid got reused, and
# treats zombies (empty cmdline) as dead.
pid_alive() {
  local pid="$1"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r "/proc/$pid/cmdline" ]]; then
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'org.apache.cassandra.service.CassandraDaemon' || return 1
  fi
  return 0
}

port_open() {
  (exec 3<>"/dev/tcp/$CASSANDRA_LISTEN/$1") 2>/dev/null
}

# Speak just enough of the CQL binary protocol to be sure a real CQL server is
# answering: send an OPTIONS request (protocol v4, stream 1, opcode 0x05, empty
# body) and expect a SUPPORTED response (version 0x84, opcode 0x06).
cql_ping() {
  local out
  out="$(timeout 5 bash -c '
      exec 3<>"/dev/tcp/$0/$1" || exit 1
      printf "\x04\x00\x00\x01\x05\x00\x00\x00\x00" >&3
      head -c 5 <&3 | od -An -tx1
    ' "$CASSANDRA_LISTEN" "$CASSANDRA_PORT" 2>/dev/null)" || return 1
  out="$(echo $out)" # normalise whitespace
  [[ "$out" == "84 00 00 01 06" ]]
}

show_log_tail() {
  local f
  for f in "$STDOUT_LOG" "$SYSTEM_LOG"; do
    if [[ -s "$f" ]]; then
      printf '\n----- last 60 lines of %s -----\n' "$f" >&2
      tail -n 60 "$f" >&2 || true
    fi
  done
  printf -- '-----\n' >&2
}

# ---------------------------------------------------------------------------
# install
# ---------------------------------------------------------------------------

cmd_install() {
  ensure_gitignore
  take_lock
  if is_installed; then
    log "Cassandra $CASSANDRA_VERSION already installed in $LIB_DIR"
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn (Maven) not found on PATH; it is needed to fetch Cassandra"
  check_java

  log "installing Cassandra $CASSANDRA_VERSION (cassandra-all + runtime deps from Maven Central) into $LIB_DIR ..."
  local start=$SECONDS
  local build="$CASSANDRA_HOME/build"
  mkdir -p "$build"
  cat >"$build/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by scripts/cassandra.sh; throwaway project used only to resolve Cassandra's jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.test</groupId>
  <artifactId>cassandra-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>$CASSANDRA_VERSION</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>$MVN_DEPENDENCY_PLUGIN_VERSION</version>
      </plugin>
    </plugins>
  </build>
</project>
EOF

  local tmp_lib="$CASSANDRA_HOME/lib.tmp.$$"
  rm -rf "$tmp_lib"
  local mvn_log="$build/mvn.log"
  # Output goes to a file (Maven prints stray ANSI codes even with -q); shown on failure.
  # shellcheck disable=SC2086
  if ! mvn -q -B -ntp -Dstyle.color=never -f "$build/pom.xml" ${CASSANDRA_MVN_ARGS:-} \
      dependency:copy-dependencies \
      -DincludeScope=runtime \
      -DoutputDirectory="$tmp_lib" >"$mvn_log" 2>&1; then
    tail -n 50 "$mvn_log" >&2 || true
    rm -rf "$tmp_lib"
    die "Maven failed to fetch org.apache.cassandra:cassandra-all:$CASSANDRA_VERSION (full output: $mvn_log)"
  fi
  [[ -f "$tmp_lib/cassandra-all-$CASSANDRA_VERSION.jar" ]] ||
    { rm -rf "$tmp_lib"; die "cassandra-all-$CASSANDRA_VERSION.jar missing after Maven run"; }
  ls "$tmp_lib"/jamm-*.jar >/dev/null 2>&1 ||
    { rm -rf "$tmp_lib"; die "jamm agent jar missing after Maven run"; }

  printf '%s\n' "$CASSANDRA_VERSION" >"$tmp_lib/.cassandra-version"
  rm -rf "$LIB_DIR"
  mv "$tmp_lib" "$LIB_DIR"
  log "installed $(find "$LIB_DIR" -name '*.jar' | wc -l) jars in $((SECONDS - start))s"
}

# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------

write_config() {
  mkdir -p "$CONF_DIR" "$LOG_DIR" "$CONF_DIR/triggers" \
    "$DATA_DIR/data" "$DATA_DIR/commitlog" "$DATA_DIR/saved_caches" \
    "$DATA_DIR/hints" "$DATA_DIR/cdc_raw"

  cat >"$CONF_DIR/cassandra.yaml" <<EOF
# Generated by scripts/cassandra.sh -- single-node Cassandra for tests.
# Regenerated on every start; edit the script, not this file.
cluster_name: 'Test Cluster'

# One node, one token (the token itself is set via -Dcassandra.initial_token).
num_tokens: 1
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
auto_bootstrap: false

# No auth for local tests.
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
role_manager: CassandraRoleManager
network_authorizer: AllowAllNetworkAuthorizer

data_file_directories:
  - $DATA_DIR/data
commitlog_directory: $DATA_DIR/commitlog
saved_caches_directory: $DATA_DIR/saved_caches
hints_directory: $DATA_DIR/hints
cdc_raw_directory: $DATA_DIR/cdc_raw
cdc_enabled: false

commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_segment_size: 8MiB
commitlog_total_space: 256MiB

seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$CASSANDRA_SEEDS"

listen_address: $CASSANDRA_LISTEN
rpc_address: $CASSANDRA_LISTEN
storage_port: $CASSANDRA_STORAGE_PORT
start_native_transport: true
native_transport_port: $CASSANDRA_PORT
endpoint_snitch: SimpleSnitch
dynamic_snitch: false

# Fresh 5.0 cluster: no need to stay wire/sstable compatible with 4.x.
storage_compatibility_mode: NONE

# Small, heap-friendly memory settings.
memtable_allocation_type: heap_buffers
memtable_heap_space: 128MiB
memtable_offheap_space: 128MiB
key_cache_size: 16MiB
counter_cache_size: 8MiB
prepared_statements_cache_size: 16MiB
concurrent_reads: 8
concurrent_writes: 8
concurrent_counter_writes: 8
concurrent_materialized_view_writes: 8
concurrent_compactors: 1
compaction_throughput: 0MiB/s

# Test friendliness: no snapshots on TRUNCATE/DROP; hints only for a cluster.
auto_snapshot: false
snapshot_before_compaction: false
hinted_handoff_enabled: $CASSANDRA_HINTED_HANDOFF
EOF

  cat >"$CONF_DIR/logback.xml" <<EOF
<!-- Generated by scripts/cassandra.sh: log to $SYSTEM_LOG only (nothing on stdout). -->
<configuration scan="false">
  <appender name="SYSTEMLOG" class="ch.qos.logback.core.rolling.RollingFileAppender">
    <file>$SYSTEM_LOG</file>
    <rollingPolicy class="ch.qos.logback.core.rolling.FixedWindowRollingPolicy">
      <fileNamePattern>$LOG_DIR/system.log.%i.zip</fileNamePattern>
      <minIndex>1</minIndex>
      <maxIndex>3</maxIndex>
    </rollingPolicy>
    <triggeringPolicy class="ch.qos.logback.core.rolling.SizeBasedTriggeringPolicy">
      <maxFileSize>50MB</maxFileSize>
    </triggeringPolicy>
    <encoder>
      <pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern>
    </encoder>
  </appender>
  <root level="INFO">
    <appender-ref ref="SYSTEMLOG"/>
  </root>
</configuration>
EOF
}

# ---------------------------------------------------------------------------
# JVM flags
# ---------------------------------------------------------------------------

build_jvm_opts() {
  local jamm
  jamm="$(jamm_jar)" || die "jamm jar not found in $LIB_DIR; run '$0 install'"

  JVM_OPTS=(
    # --- heap (test sized) ---
    "-Xms$CASSANDRA_HEAP" "-Xmx$CASSANDRA_HEAP"

    # --- conf/jvm-server.options (Cassandra 5.0) ---
    -ea
    -da:net.openhft...
    -XX:+UseThreadPriorities
    -XX:+HeapDumpOnOutOfMemoryError
    -Xss256k
    -XX:+AlwaysPreTouch
    -XX:+UseTLAB
    -XX:+ResizeTLAB
    -XX:+UseNUMA
    -XX:+PerfDisableSharedMem
    -Djava.net.preferIPv4Stack=true

    # --- conf/jvm17-server.options (Cassandra 5.0): G1 ---
    -XX:+UseG1GC
    -XX:+ParallelRefProcEnabled
    -XX:MaxTenuringThreshold=1
    -XX:G1HeapRegionSize=16m
    -XX:G1RSetUpdatingPauseTimePercent=5
    -XX:MaxGCPauseMillis=300
    -XX:InitiatingHeapOccupancyPercent=70

    # --- conf/jvm17-server.options (Cassandra 5.0): JPMS ---
    -Djdk.attach.allowAttachSelf=true
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
    --add-exports java.sql/java.sql=ALL-UNNAMED
    --add-exports java.base/java.lang.ref=ALL-UNNAMED
    --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
    --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
    --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
    --add-opens java.base/java.lang.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens java.base/java.io=ALL-UNNAMED
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
    --add-opens java.base/java.lang=ALL-UNNAMED
    --add-opens java.base/java.util=ALL-UNNAMED
    --add-opens java.base/java.nio=ALL-UNNAMED

    # --- conf/jvm17-server.options (Cassandra 5.0): Netty ---
    -Dio.netty.tryReflectionSetAccessible=true
    -Dio.netty.allocator.useCacheForAllThreads=true
    -Dio.netty.allocator.maxOrder=11

    # --- what bin/cassandra + cassandra-env.sh would add ---
    "-javaagent:$jamm"
    -XX:+ExitOnOutOfMemoryError
    "-XX:HeapDumpPath=$LOG_DIR"
    "-XX:ErrorFile=$LOG_DIR/hs_err_%p.log"
    "-Dcassandra.home=$CASSANDRA_HOME"
    "-Dcassandra.config=file://$CONF_DIR/cassandra.yaml"
    "-Dcassandra.logdir=$LOG_DIR"
    "-Dcassandra.storagedir=$DATA_DIR"
    "-Dcassandra.triggers_dir=$CONF_DIR/triggers"
    "-Dlogback.configurationFile=file://$CONF_DIR/logback.xml"
    -Dcassandra-foreground=no
    -Dchronicle.analytics.disable=true
    -Dchronicle.announcer.disable=true

    # --- fast single-node start for tests ---
    "-Dcassandra.initial_token=$CASSANDRA_INITIAL_TOKEN"
    -Dcassandra.skip_wait_for_gossip_to_settle=0
    -Dcassandra.ring_delay_ms=1000
    -Dcassandra.superuser_setup_delay_ms=0
    -Dcassandra.shutdown_announce_in_ms=0
  )

  if [[ -n "$CASSANDRA_JMX_PORT" ]]; then
    JVM_OPTS+=("-Dcassandra.jmx.local.port=$CASSANDRA_JMX_PORT" -Djava.rmi.server.hostname=127.0.0.1)
  fi
  if [[ -n "${CASSANDRA_JVM_EXTRA_OPTS:-}" ]]; then
    # shellcheck disable=SC2206
    JVM_OPTS+=($CASSANDRA_JVM_EXTRA_OPTS)
  fi
}

# ---------------------------------------------------------------------------
# start / stop / status
# ---------------------------------------------------------------------------

# Wait for the node whose pid is $1 to serve CQL. $2 = byte offset in
# system.log where this run's output starts. Returns 0 on success.
wait_for_cql() {
  local pid="$1" log_offset="${2:-0}" start=$SECONDS last_report=-1 elapsed saw_log=0
  log "waiting up to ${CASSANDRA_START_TIMEOUT}s for CQL on $CASSANDRA_LISTEN:$CASSANDRA_PORT (log: $SYSTEM_LOG)"
  while :; do
    elapsed=$((SECONDS - start))
    if ! pid_alive "$pid"; then
      log "Cassandra process $pid exited during startup"
      show_log_tail
      rm -f "$PID_FILE"
      return 1
    fi
    if ((saw_log == 0)) && [[ -f "$SYSTEM_LOG" ]] &&
      tail -c +"$((log_offset + 1))" "$SYSTEM_LOG" 2>/dev/null | grep -q 'Starting listening for CQL clients'; then
      saw_log=1
      log "  ... ${elapsed}s: log says 'Starting listening for CQL clients'"
    fi
    # The real readiness test: a CQL OPTIONS request gets a SUPPORTED answer.
    if port_open "$CASSANDRA_PORT" && cql_ping; then
      log "Cassandra $CASSANDRA_VERSION is up (pid $pid, CQL on $CASSANDRA_LISTEN:$CASSANDRA_PORT) after ${elapsed}s"
      return 0
    fi
    if ((elapsed >= CASSANDRA_START_TIMEOUT)); then
      log "timed out after ${elapsed}s waiting for CQL on $CASSANDRA_LISTEN:$CASSANDRA_PORT (pid $pid left running; use '$0 stop')"
      show_log_tail
      return 1
    fi
    if ((elapsed / 10 != last_report)); then
      last_report=$((elapsed / 10))
      local last=""
      [[ -f "$SYSTEM_LOG" ]] &&
        last="$(tail -c +"$((log_offset + 1))" "$SYSTEM_LOG" 2>/dev/null | tail -n 1 | cut -c1-160)"
      log "  ... ${elapsed}s: still starting${last:+ | $last}"
    fi
    sleep 1
  done
}

cmd_start() {
  take_lock
  cmd_install
  check_java

  local pid
  if pid="$(read_pid)" && pid_alive "$pid"; then
    if cql_ping; then
      log "already running (pid $pid, CQL on $CASSANDRA_LISTEN:$CASSANDRA_PORT)"
      return 0
    fi
    log "process $pid from $PID_FILE is alive but CQL is not up yet; waiting for it"
    wait_for_cql "$pid" 0
    return
  fi
  rm -f "$PID_FILE"

  if port_open "$CASSANDRA_PORT"; then
    die "port $CASSANDRA_LISTEN:$CASSANDRA_PORT is already in use by another process (not started by this script; no live pid in $PID_FILE)"
  fi
  if port_open "$CASSANDRA_STORAGE_PORT"; then
    die "storage port $CASSANDRA_LISTEN:$CASSANDRA_STORAGE_PORT is already in use; set CASSANDRA_STORAGE_PORT"
  fi

  write_config
  build_jvm_opts

  local -a cmd=("$JAVA" "${JVM_OPTS[@]}" -cp "$CONF_DIR:$LIB_DIR/*" org.apache.cassandra.service.CassandraDaemon)
  printf '%q ' "${cmd[@]}" >"$LOG_DIR/command.txt"
  printf '\n' >>"$LOG_DIR/command.txt"

  local log_offset=0
  [[ -f "$SYSTEM_LOG" ]] && log_offset="$(wc -c <"$SYSTEM_LOG")"

  log "starting Cassandra $CASSANDRA_VERSION (heap $CASSANDRA_HEAP, CQL port $CASSANDRA_PORT, storage port $CASSANDRA_STORAGE_PORT, home $CASSANDRA_HOME)"
  {
    printf '\n===== %s: starting Cassandra %s =====\n' "$(date -u +%FT%TZ)" "$CASSANDRA_VERSION"
  } >>"$STDOUT_LOG"

  # Detach into its own session so the node survives the calling shell / CI step.
  # The inner shell records its own pid and then execs java (same pid).
  local launcher=(bash -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" "${cmd[@]}")
  if command -v setsid >/dev/null 2>&1; then
    launcher=(setsid "${launcher[@]}")
  fi
  (cd "$CASSANDRA_HOME" && exec nohup "${launcher[@]}" >>"$STDOUT_LOG" 2>&1 </dev/null 9>&-) &

  local i
  for ((i = 0; i < 100; i++)); do
    pid="$(read_pid)" && break
    sleep 0.1
  done
  [[ -n "${pid:-}" ]] || { show_log_tail; die "Cassandra did not write its pid file $PID_FILE"; }
  log "launched pid $pid"

  wait_for_cql "$pid" "$log_offset"
}

cmd_stop() { stop_service Cassandra "$CASSANDRA_STOP_TIMEOUT"; }

cmd_status() {
  local pid
  if pid="$(read_pid)" && pid_alive "$pid"; then
    if cql_ping; then
      echo "running (pid $pid, Cassandra $CASSANDRA_VERSION, CQL on $CASSANDRA_LISTEN:$CASSANDRA_PORT)"
      return 0
    fi
    echo "process $pid alive but CQL not answering on $CASSANDRA_LISTEN:$CASSANDRA_PORT (starting or unhealthy)"
    return 1
  fi
  echo "not running"
  return 1
}

usage() {
  cat >&2 <<EOF
usage: $0 {install|start|stop|restart|status}
  install  fetch Cassandra $CASSANDRA_VERSION jars from Maven Central into $LIB_DIR
  start    install if needed, start a single node, wait until CQL answers on $CASSANDRA_LISTEN:$CASSANDRA_PORT
  stop     stop the node (SIGTERM, SIGKILL after ${CASSANDRA_STOP_TIMEOUT}s)
  restart  stop then start
  status   exit 0 iff the node is running and answering CQL
EOF
}

main() {
  local sub="${1:-}"
  case "$sub" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    restart) cmd_stop && cmd_start ;;
    status) cmd_status ;;
    -h | --help | help) usage ;;
    *) usage; exit 2 ;;
  esac
}

main "$@"
