#!/usr/bin/env bash
# Lints the OpenAPI document exactly as the API serves it (built from buildApp, no server needed):
# Redocly's recommended rules (redocly.yaml, warnings as errors) and Spectral's OpenAPI and OWASP
# rulesets (.spectral.yaml), failing on any warning.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
npx tsx services/command-api/src/openapi-cli.ts "$out/openapi.json"
# Redocly's banner about Node versions is noise here; its findings and exit code are kept.
npx redocly lint "$out/openapi.json" --config redocly.yaml --format stylish 2> >(grep -v -e 'Node' -e '[║╔╚]' >&2)
npx spectral lint "$out/openapi.json" --ruleset .spectral.yaml --fail-severity warn --quiet
