#!/usr/bin/env bash
# Fetches the playground's GraphiQL and React from the npm registry, at the
# pinned versions, checks each file against its pinned digest (the Subresource
# Integrity hashes gqlgen's CDN playground uses for the same versions), and
# writes them to playground/assets/, where the server embeds them: the
# playground then needs no internet. The result is committed; run this only
# to change versions (and update the digests below).
set -euo pipefail
cd "$(dirname "$0")/.."
out=playground/assets
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# package@version  file in the package  sha256 (base64)
assets=(
  "graphiql@4.1.2 graphiql.min.js hnImuor1znlJkD/FOTL3jayfS/xsyNoP04abi8bFJWs="
  "graphiql@4.1.2 graphiql.min.css MEh+B2NdMSpj9kexQNN3QKc8UzMrCXW/Sx/phcpuyIU="
  "react@18.2.0 umd/react.production.min.js S0lp+k7zWUMk2ixteM6HZvu8L9Eh//OVrt+ZfbCpmgY="
  "react-dom@18.2.0 umd/react-dom.production.min.js IXWO0ITNDjfnNXIu5POVfqlgYoop36bDzhodR6LW5Pc="
)
mkdir -p "$out"
licenses="$work/LICENSES.txt"
: > "$licenses"
for spec in "${assets[@]}"; do
  read -r pkg file digest <<<"$spec"
  dir="$work/${pkg//[@\/]/_}"
  if [[ ! -d "$dir" ]]; then
    mkdir -p "$dir"
    tgz="$(cd "$work" && npm pack --silent "$pkg")"
    tar xzf "$work/$tgz" -C "$dir"
    printf '%s:\n' "$pkg" >>"$licenses"
    cat "$dir/package/LICENSE" >>"$licenses"
    printf '\n' >>"$licenses"
  fi
  got="$(openssl dgst -sha256 -binary "$dir/package/$file" | base64)"
  if [[ "$got" != "$digest" ]]; then
    echo "playground-assets: $pkg $file has sha256-$got, want sha256-$digest" >&2
    exit 1
  fi
  cp "$dir/package/$file" "$out/$(basename "$file")"
  echo "playground-assets: $pkg $file ok"
done
cp "$licenses" "$out/LICENSES.txt"
