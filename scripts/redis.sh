#!/usr/bin/env bash
#
# Run a private redis-server for tests and local development: no persistence,
# bound to 127.0.0.1, its pid file (redis-PORT.pid), log (redis-PORT.log) and
# working directory under <repo>/.redis (git-ignored). Servers on different
# ports are independent: each has its own pid file. redis-server comes from
# Debian's package; when it is missing and we are root, `start` installs it
# with apt-get.
#
# Usage: scripts/redis.sh {install|start|stop|restart|status}
#
# Environment (all optional):
#   REDIS_PORT            TCP port                        (default: 6379)
#   REDIS_DIR             pid file, log and working dir   (default: <repo>/.redis)
#   REDIS_START_TIMEOUT   seconds to wait for PONG        (default: 30)
#   REDIS_STOP_TIMEOUT    seconds before SIGKILL          (default: 15)
#
# The tests read the server's address from CHAT_REDIS_URL, e.g.
#   CHAT_REDIS_URL=redis://127.0.0.1:6379/0 go test -race ./broker/
#
set -euo pipefail

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/.." && pwd -P)"

REDIS_PORT="${REDIS_PORT:-6379}"
REDIS_DIR="${REDIS_DIR:-$REPO_ROOT/.redis}"
REDIS_START_TIMEOUT="${REDIS_START_TIMEOUT:-30}"
REDIS_STOP_TIMEOUT="${REDIS_STOP_TIMEOUT:-15}"
REDIS_HOST="127.0.0.1"

PID_FILE="$REDIS_DIR/redis-$REDIS_PORT.pid"
LOG_FILE="$REDIS_DIR/redis-$REDIS_PORT.log"

LOG_TAG=redis.sh SERVICE_DIR="$REDIS_DIR" LOCK_WAIT=300
# shellcheck source=scripts/lib.sh
source "$SCRIPT_DIR/lib.sh"

[[ "$REDIS_PORT" =~ ^[0-9]+$ ]] || die "REDIS_PORT must be a number, got '$REDIS_PORT'"

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

# True if $1 is a live redis-server process serving our port. The /proc
# check (redis-server titles itself "redis-server HOST:PORT") guards against
# a stale pid file whose pid got reused, and treats zombies as dead.
pid_alive() {
  local pid="$1"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r "/proc/$pid/cmdline" ]]; then
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "redis-server.*:$REDIS_PORT\b" || return 1
  fi
  return 0
}

# True if a Redis server answers PING on the port.
redis_ping() {
  [[ "$(timeout 5 redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null)" == "PONG" ]]
}

port_open() {
  (exec 3<>"/dev/tcp/$REDIS_HOST/$REDIS_PORT") 2>/dev/null
}

show_log_tail() {
  if [[ -s "$LOG_FILE" ]]; then
    printf '\n----- last 30 lines of %s -----\n' "$LOG_FILE" >&2
    tail -n 30 "$LOG_FILE" >&2 || true
    printf -- '-----\n' >&2
  fi
}

# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------

cmd_install() {
  if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
    return 0
  fi
  if [[ "$(id -u)" != 0 ]]; then
    die "redis-server is not installed and we are not root; install Debian's package: sudo apt-get install -y redis-server"
  fi
  command -v apt-get >/dev/null 2>&1 || die "redis-server is not installed and apt-get is not available"
  log "installing Debian's redis-server package ..."
  export DEBIAN_FRONTEND=noninteractive
  # Try without refreshing the package lists first; refresh only if that fails
  # (fresh containers ship without lists).
  if ! apt-get install -y -q --no-install-recommends redis-server >/dev/null; then
    log "apt-get install failed; running apt-get update and retrying"
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends redis-server >/dev/null ||
      die "apt-get install redis-server failed"
  fi
  command -v redis-server >/dev/null 2>&1 || die "redis-server still not on PATH after installing the package"
  log "installed $(redis-server --version | head -n 1)"
}

cmd_start() {
  ensure_gitignore
  take_lock
  cmd_install

  local pid
  if pid="$(read_pid)" && pid_alive "$pid"; then
    if redis_ping; then
      log "already running (pid $pid, redis://$REDIS_HOST:$REDIS_PORT)"
      return 0
    fi
    log "process $pid from $PID_FILE is alive but does not answer PING; waiting for it"
  else
    rm -f "$PID_FILE"
    if port_open; then
      # Typically the distribution's own service (CI may start it). It serves
      # the tests just as well, but this script will not stop it.
      if redis_ping; then
        log "a Redis server not started by this script already answers on $REDIS_HOST:$REDIS_PORT; using it"
        return 0
      fi
      die "port $REDIS_HOST:$REDIS_PORT is in use by something that is not Redis; set REDIS_PORT"
    fi
    mkdir -p "$REDIS_DIR"
    log "starting redis-server on $REDIS_HOST:$REDIS_PORT (dir $REDIS_DIR, no persistence)"
    redis-server \
      --port "$REDIS_PORT" \
      --bind "$REDIS_HOST" \
      --save '' \
      --appendonly no \
      --daemonize yes \
      --pidfile "$PID_FILE" \
      --dir "$REDIS_DIR" \
      --logfile "$LOG_FILE" 9>&- ||
      { show_log_tail; die "redis-server failed to start"; }
  fi

  local start=$SECONDS
  until redis_ping; do
    if ((SECONDS - start >= REDIS_START_TIMEOUT)); then
      show_log_tail
      die "no PONG from $REDIS_HOST:$REDIS_PORT after ${REDIS_START_TIMEOUT}s"
    fi
    sleep 0.1
  done
  pid="$(read_pid)" || pid="?"
  log "Redis is up (pid $pid, redis://$REDIS_HOST:$REDIS_PORT) after $((SECONDS - start))s"
}

cmd_stop() { stop_service redis-server "$REDIS_STOP_TIMEOUT"; }

cmd_status() {
  local pid
  if pid="$(read_pid)" && pid_alive "$pid"; then
    if redis_ping; then
      echo "running (pid $pid, redis://$REDIS_HOST:$REDIS_PORT)"
      return 0
    fi
    echo "process $pid alive but not answering PING on $REDIS_HOST:$REDIS_PORT"
    return 1
  fi
  if command -v redis-cli >/dev/null 2>&1 && redis_ping; then
    echo "not started by this script, but a Redis server answers on $REDIS_HOST:$REDIS_PORT"
    return 0
  fi
  echo "not running"
  return 1
}

usage() {
  cat >&2 <<EOF
usage: $0 {install|start|stop|restart|status}
  install  install Debian's redis-server package if missing (needs root)
  start    install if needed, start a private redis-server, wait for PONG on $REDIS_HOST:$REDIS_PORT
  stop     stop the server this script started (SIGTERM, SIGKILL after ${REDIS_STOP_TIMEOUT}s)
  restart  stop then start on the same port
  status   exit 0 iff a Redis server answers on $REDIS_HOST:$REDIS_PORT
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
