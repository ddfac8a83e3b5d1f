# Shared by scripts/cassandra.sh, scripts/redis.sh and scripts/s3.sh; sourced, not run.
# The sourcing script sets LOG_TAG and PID_FILE and defines read_pid,
# pid_alive (its own test that the pid is still its service) and take_lock.

log() { printf '[%s] %s\n' "$LOG_TAG" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$LOG_TAG" "$*" >&2; exit 1; }

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
