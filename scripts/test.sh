#!/usr/bin/env bash
# `npm test`: type checks, lints, and runs every test tier against real Kafka, registry and PostgreSQL.
# Infrastructure this script had to start is stopped again at the end (LEADLINE_KEEP_INFRA=1 keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node.sh
bash scripts/install-deps.sh

npx tsc -p tsconfig.json --noEmit
npx tsc -p apps/dashboard/tsconfig.json --noEmit
npx eslint .
# The shape: no service imports another, packages import no service, the domain does no I/O, no circles.
npx depcruise packages services apps bench examples --config .dependency-cruiser.cjs
npx prettier --check . >/dev/null || { npx prettier --check .; exit 1; }
bash scripts/lint-openapi.sh
# Clients generated from the document, as partners make them: complete, named by it, compiling.
bash scripts/check-generated-clients.sh

if ! docker info >/dev/null 2>&1 && ! bash scripts/infra/status.sh >/dev/null 2>&1; then
  [ "${LEADLINE_KEEP_INFRA:-}" = 1 ] || trap 'bash scripts/infra/down.sh' EXIT
  bash scripts/infra/up.sh
fi
# The dashboard's browser tests drive Chromium from Debian's packages (browser downloads are not an option).
if ! command -v chromium >/dev/null 2>&1 && [ -z "${CHROMIUM_PATH:-}" ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    sudo -n apt-get update -qq && sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null ||
      { echo "Chromium is missing: apt-get install chromium (or set CHROMIUM_PATH)." >&2; exit 1; }
  fi
fi
npx vitest run --reporter=default --reporter=./scripts/summary-reporter.ts "$@"
