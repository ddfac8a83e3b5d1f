#!/usr/bin/env bash
# Installs Debian's chromium, the real browser of the browser tests, unless
# it is there already. Needs root (apt-get) when it is missing.
set -euo pipefail
log() { printf '[chromium.sh] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
[[ "$(id -u)" == 0 ]] || die "chromium is not installed and we are not root; install Debian's package: sudo apt-get install -y chromium"
command -v apt-get >/dev/null 2>&1 || die "chromium is not installed and apt-get is not available"
log "installing Debian's chromium package ..."
export DEBIAN_FRONTEND=noninteractive
# Try without refreshing the package lists first; refresh only if that fails.
if ! apt-get install -y -q chromium >/dev/null; then
  log "apt-get install failed; running apt-get update and retrying"
  apt-get update -q >/dev/null
  apt-get install -y -q chromium >/dev/null || die "apt-get install chromium failed"
fi
log "installed $(chromium --version)"
