#!/usr/bin/env bash
# Regenerates the partner client's types from the OpenAPI document the API serves:
# `bash examples/generate-client.sh [output file]` (default: examples/partner-client/leadline-api.d.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-examples/partner-client/leadline-api.d.ts}"
document="$(mktemp --suffix=.json)"
trap 'rm -f "$document"' EXIT
npx tsx services/command-api/src/openapi-cli.ts "$document"
# Fields with a default are optional in what a client sends, so defaults do not make them required.
npx openapi-typescript "$document" --default-non-nullable false --output "$out" >/dev/null
