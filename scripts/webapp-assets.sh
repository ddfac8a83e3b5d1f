#!/usr/bin/env bash
# Fetches the web app's one third-party file, the official graphql-ws
# client's browser build, from the npm registry at the pinned version (the
# one clients/graphql-ws/package-lock.json pins), checks it against its
# pinned digest and writes it to webapp/static/vendor/, where the server
# embeds it: the app then loads nothing from the internet. The result is
# committed; run this only to change the version (and update the digest).
set -euo pipefail
cd "$(dirname "$0")/.."
out=webapp/static/vendor
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

pkg=graphql-ws@6.4.2
file=umd/graphql-ws.min.js
digest=Xx4lC96gpVHVgnIEgoHb9bL7afqhIBYLq0lIXHK28k0= # sha256, base64

mkdir -p "$out"
tgz="$(cd "$work" && npm pack --silent "$pkg")"
tar xzf "$work/$tgz" -C "$work"
got="$(openssl dgst -sha256 -binary "$work/package/$file" | base64)"
if [[ "$got" != "$digest" ]]; then
  echo "webapp-assets: $pkg $file has sha256-$got, want sha256-$digest" >&2
  exit 1
fi
cp "$work/package/$file" "$out/graphql-ws.min.js"
{ printf '%s:\n' "$pkg"; cat "$work/package/LICENSE.md"; } >"$out/LICENSE.txt"
echo "webapp-assets: $pkg $file ok"
