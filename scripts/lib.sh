# Shared by scripts/cassandra.sh, scripts/redis.sh and scripts/s3.sh; sourced, not run.
# The sourcing script sets LOG_TAG, SERVICE_DIR (the service's binaries,
# data, pid file and lock), PID_FILE, REPO_ROOT and optionally LOCK_WAIT
# (seconds, default 900), and defines pid_alive (its own test that the pid
# is still its service).

log() { printf '[%s] %s\n' "$LOG_TAG" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$LOG_TAG" "$*" >&2; exit 1; }

# ensure_gitignore: when SERVICE_DIR is the default <repo>/.NAME, make sure
# the repository ignores it.
ensure_gitignore() {
  local entry="/${SERVICE_DIR#"$REPO_ROOT"/}/"
  [[ "$SERVICE_DIR" == "$REPO_ROOT"/.* && "$entry" != */*/*/ ]] || return 0
  local gi="$REPO_ROOT/.gitignore"
  if [[ ! -f "$gi" ]] || ! grep -qxF "$entry" "$gi"; then
    # Start on a fresh line if the file lacks a trailing newline.
    if [[ -s "$gi" && -n "$(tail -c1 "$gi")" ]]; then
      printf '\n' >>"$gi"
    fi
    printf '%s\n' "$entry" >>"$gi"
    log "added $entry to $gi"
  fi
}

# take_lock: serialise install/start/stop between concurrent invocations
# (parallel test packages all calling `start`). fd 9 holds the lock; the
# scripts close it for the service process.
LOCKED=0
take_lock() {
  ((LOCKED)) && return 0
  command -v flock >/dev/null 2>&1 || return 0
  mkdir -p "$SERVICE_DIR"
  exec 9>"$SERVICE_DIR/.lock"
  if ! flock -n 9; then
    log "another $LOG_TAG is running against $SERVICE_DIR; waiting for it ..."
    flock -w "${LOCK_WAIT:-900}" 9 || die "timed out waiting for lock $SERVICE_DIR/.lock"
  fi
  LOCKED=1
}

# read_pid: print the pid in PID_FILE; fails if there is none.
read_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(tr -d '[:space:]' <"$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  printf '%s\n' "$pid"
}

# stop_service NAME TIMEOUT: SIGTERM the service of PID_FILE, SIGKILL it
# after TIMEOUT seconds, and remove the pid file. A missing or stale pid
# file means it is not running, which is not an error.
stop_service() {
  local name=$1 timeout=$2 pid
  take_lock
  if ! pid="$(read_pid)"; then
    log "not running (no pid file $PID_FILE)"
    return 0
  fi
  if ! pid_alive "$pid"; then
    log "not running (stale pid $pid); removing $PID_FILE"
    rm -f "$PID_FILE"
    return 0
  fi
  log "stopping $name (pid $pid) with SIGTERM ..."
  kill -TERM "$pid" 2>/dev/null || true
  local start=$SECONDS
  while pid_alive "$pid"; do
    if ((SECONDS - start >= timeout)); then
      log "still alive after ${timeout}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 1
      break
    fi
    sleep 0.2
  done
  if pid_alive "$pid"; then
    die "pid $pid did not exit"
  fi
  rm -f "$PID_FILE"
  log "stopped after $((SECONDS - start))s"
}
