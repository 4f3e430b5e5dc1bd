#!/usr/bin/env bash
# Generates TypeScript types (openapi-typescript) from the OpenAPI document the API serves, for the
# clients that commit them: the partner client example and the embedded dashboard, whose API mounts
# the same routes. `bash scripts/generate-api-types.sh` rewrites both; with a file argument it writes
# that file only (the tests compare it with each committed copy).
set -euo pipefail
cd "$(dirname "$0")/.."
committed=(examples/partner-client/leadline-api.d.ts apps/dashboard/src/lib/leadline-api.d.ts)
out="${1:-}"
document="$(mktemp --suffix=.json)"
types="$(mktemp --suffix=.d.ts)"
trap 'rm -f "$document" "$types"' EXIT
npx tsx services/command-api/src/openapi-cli.ts "$document"
# Default flags, as any partner would run it: the document keeps request fields with a default optional.
npx openapi-typescript "$document" --output "$types" >/dev/null
if [ -n "$out" ]; then
  cp "$types" "$out"
else
  for file in "${committed[@]}"; do cp "$types" "$file"; done
fi
