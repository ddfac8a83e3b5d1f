#!/usr/bin/env bash
# Runs every fuzz target of the project (func FuzzXxx in a _test.go file)
# for FUZZTIME each (default 10s). `go test -fuzz` takes one target at a
# time, so they run one after another. New failing inputs are written to
# the package's testdata/fuzz/, where `go test` replays them from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-10s}"
GO="${GO:-go}"
status=0
while IFS=: read -r file name; do
  pkg="./$(dirname "$file")"
  printf '\n=== fuzz %s %s (%s)\n' "$pkg" "$name" "$FUZZTIME"
  if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"; then
    status=1
  fi
done < <(grep -o '^func Fuzz[A-Za-z0-9_]*' --include='*_test.go' -r . | sed 's#^\./##; s#:func #:#' | sort)
exit $status
