#!/usr/bin/env bash
#
# Run a real S3-compatible server for tests and local development: the Versity
# S3 Gateway (versitygw, an S3 server over a folder) with its posix backend,
# bound to 127.0.0.1, with root credentials. `install` builds it from source
# with `go install` (pinned version) into <repo>/.s3/bin, the cache of this
# script's downloads; its buckets live in <repo>/.s3/data (all git-ignored).
#
# Usage: scripts/s3.sh {install|start|stop|restart|status|url}
#
# Environment (all optional):
#   S3_PORT            TCP port                                (default: 7070)
#   S3_DIR             binary, data, pid file and log          (default: <repo>/.s3)
#   S3_ACCESS_KEY      root access key                         (default: chatql)
#   S3_SECRET_KEY      root secret key                         (default: chatql-secret)
#   S3_BUCKET          the bucket of `url`                     (default: chatql-test)
#   S3_START_TIMEOUT   seconds to wait for an answer           (default: 30)
#   S3_STOP_TIMEOUT    seconds before SIGKILL                  (default: 15)
#   GO                 the go command for install              (default: go)
#
# The tests read the server's address, credentials and bucket from
# CHAT_S3_URL, which `url` prints (the bucket is created if missing):
#   CHAT_S3_URL=$(scripts/s3.sh url) go test -race ./files/s3/
#
set -euo pipefail

# Pinned versitygw version, and its main package.
VERSITYGW_VERSION="v1.8.0"
VERSITYGW_PKG="github.com/versity/versitygw/cmd/versitygw"

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/.." && pwd -P)"

S3_PORT="${S3_PORT:-7070}"
S3_DIR="${S3_DIR:-$REPO_ROOT/.s3}"
S3_ACCESS_KEY="${S3_ACCESS_KEY:-chatql}"
S3_SECRET_KEY="${S3_SECRET_KEY:-chatql-secret}"
S3_BUCKET="${S3_BUCKET:-chatql-test}"
S3_START_TIMEOUT="${S3_START_TIMEOUT:-30}"
S3_STOP_TIMEOUT="${S3_STOP_TIMEOUT:-15}"
GO="${GO:-go}"
S3_HOST="127.0.0.1"

BIN_DIR="$S3_DIR/bin"
BIN="$BIN_DIR/versitygw"
VERSION_MARKER="$BIN_DIR/.versitygw-version"
DATA_DIR="$S3_DIR/data"
PID_FILE="$S3_DIR/versitygw-$S3_PORT.pid"
LOG_FILE="$S3_DIR/versitygw-$S3_PORT.log"

LOG_TAG=s3.sh SERVICE_DIR="$S3_DIR"
# shellcheck source=scripts/lib.sh
source "$SCRIPT_DIR/lib.sh"

[[ "$S3_PORT" =~ ^[0-9]+$ ]] || die "S3_PORT must be a number, got '$S3_PORT'"

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

# True if $1 is a live versitygw serving our port. The /proc check guards
# against a stale pid file whose pid got reused, and treats zombies as dead.
pid_alive() {
  local pid="$1"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r "/proc/$pid/cmdline" ]]; then
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "versitygw --port $S3_HOST:$S3_PORT " || return 1
  fi
  return 0
}

# True if $1 is alive and no zombie: the test while versitygw starts, when
# its pid may still show the shell that forked it (pid_alive's command line
# check would take that for a dead server).
alive_not_zombie() {
  local pid="$1"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}

# True if an S3 server answers on the port: an anonymous ListBuckets, sent
# with bash alone, gets an S3 XML answer (403 AccessDenied from versitygw).
s3_ping() {
  timeout 5 bash -c '
      exec 3<>"/dev/tcp/$0/$1" || exit 1
      printf "GET / HTTP/1.0\r\nHost: %s:%s\r\n\r\n" "$0" "$1" >&3
      cat <&3
    ' "$S3_HOST" "$S3_PORT" 2>/dev/null | grep -q '<Error>\|<ListAllMyBucketsResult'
}

port_open() {
  (exec 3<>"/dev/tcp/$S3_HOST/$S3_PORT") 2>/dev/null
}

show_log_tail() {
  if [[ -s "$LOG_FILE" ]]; then
    printf '\n----- last 30 lines of %s -----\n' "$LOG_FILE" >&2
    tail -n 30 "$LOG_FILE" >&2 || true
    printf -- '-----\n' >&2
  fi
}

is_installed() {
  [[ -x "$BIN" && -f "$VERSION_MARKER" && "$(cat "$VERSION_MARKER")" == "$VERSITYGW_VERSION" ]]
}

# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------

cmd_install() {
  ensure_gitignore
  take_lock
  if is_installed; then
    return 0
  fi
  command -v "$GO" >/dev/null 2>&1 || die "$GO not found: Go builds versitygw"
  log "building versitygw $VERSITYGW_VERSION into $BIN_DIR (go install; 1-3 minutes on 2 cores) ..."
  local start=$SECONDS
  mkdir -p "$BIN_DIR"
  # Outside the repo, so that its go.mod plays no part.
  (cd / && GOBIN="$BIN_DIR" GOFLAGS=-buildvcs=false \
    "$GO" install "$VERSITYGW_PKG@$VERSITYGW_VERSION") ||
    die "go install $VERSITYGW_PKG@$VERSITYGW_VERSION failed"
  printf '%s\n' "$VERSITYGW_VERSION" >"$VERSION_MARKER"
  log "built versitygw $VERSITYGW_VERSION in $((SECONDS - start))s"
}

cmd_start() {
  cmd_install
  take_lock
  local pid
  if pid="$(read_pid)" && pid_alive "$pid"; then
    log "already running (pid $pid, http://$S3_HOST:$S3_PORT)"
  else
    rm -f "$PID_FILE"
    port_open && die "port $S3_HOST:$S3_PORT is in use by another process; set S3_PORT"
    mkdir -p "$DATA_DIR"
    log "starting versitygw on $S3_HOST:$S3_PORT (data $DATA_DIR)"
    ROOT_ACCESS_KEY="$S3_ACCESS_KEY" ROOT_SECRET_KEY="$S3_SECRET_KEY" \
      setsid "$BIN" --port "$S3_HOST:$S3_PORT" --quiet posix "$DATA_DIR" \
      </dev/null >>"$LOG_FILE" 2>&1 9>&- &
    printf '%s\n' "$!" >"$PID_FILE"
  fi
  local start=$SECONDS
  until s3_ping; do
    pid="$(read_pid)" || pid=""
    if ! alive_not_zombie "$pid"; then
      show_log_tail
      die "versitygw exited"
    fi
    if ((SECONDS - start >= S3_START_TIMEOUT)); then
      show_log_tail
      die "no S3 answer from $S3_HOST:$S3_PORT after ${S3_START_TIMEOUT}s"
    fi
    sleep 0.1
  done
  log "versitygw is up (pid $(read_pid), http://$S3_HOST:$S3_PORT) after $((SECONDS - start))s"
}

cmd_stop() { stop_service versitygw "$S3_STOP_TIMEOUT"; }

cmd_status() {
  local pid
  if pid="$(read_pid)" && pid_alive "$pid" && s3_ping; then
    echo "running (pid $pid, http://$S3_HOST:$S3_PORT)"
    return 0
  fi
  echo "not running"
  return 1
}

# The CHAT_S3_URL of the server: http://ACCESS:SECRET@HOST:PORT/BUCKET.
cmd_url() {
  printf 'http://%s:%s@%s:%s/%s\n' "$S3_ACCESS_KEY" "$S3_SECRET_KEY" "$S3_HOST" "$S3_PORT" "$S3_BUCKET"
}

usage() {
  cat >&2 <<EOF
usage: $0 {install|start|stop|restart|status|url}
  install  build versitygw $VERSITYGW_VERSION into $BIN_DIR if missing
  start    install if needed, start versitygw on $S3_HOST:$S3_PORT, wait for an S3 answer
  stop     stop the server this script started (SIGTERM, SIGKILL after ${S3_STOP_TIMEOUT}s)
  restart  stop then start on the same port
  status   exit 0 iff the server this script started answers
  url      print CHAT_S3_URL for the tests
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
    url) cmd_url ;;
    -h | --help | help) usage ;;
    *) usage; exit 2 ;;
  esac
}

main "$@"
