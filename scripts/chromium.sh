#!/usr/bin/env bash
# Installs Debian's chromium, the real browser of the browser tests, and the
# emoji font their screenshots show reactions in, unless they are there
# already. Needs root (apt-get) when something is missing.
set -euo pipefail
log() { printf '[chromium.sh] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
packages=()
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
if command -v dpkg >/dev/null 2>&1 && ! dpkg -s fonts-noto-color-emoji >/dev/null 2>&1; then
  packages+=(fonts-noto-color-emoji)
fi
if [[ ${#packages[@]} == 0 ]]; then
  exit 0
fi
[[ "$(id -u)" == 0 ]] || die "${packages[*]} not installed and we are not root; install Debian's packages: sudo apt-get install -y ${packages[*]}"
command -v apt-get >/dev/null 2>&1 || die "${packages[*]} not installed and apt-get is not available"
log "installing Debian's ${packages[*]} ..."
export DEBIAN_FRONTEND=noninteractive
# Try without refreshing the package lists first; refresh only if that fails.
if ! apt-get install -y -q "${packages[@]}" >/dev/null; then
  log "apt-get install failed; running apt-get update and retrying"
  apt-get update -q >/dev/null
  apt-get install -y -q "${packages[@]}" >/dev/null || die "apt-get install ${packages[*]} failed"
fi
log "installed ${packages[*]} ($(chromium --version))"
