#!/usr/bin/env bash
# `npm run bench [scenario…]`: brings up the infrastructure and runs the benchmarks in bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node.sh
bash scripts/install-deps.sh
bash scripts/infra/up.sh
npx tsx bench/run.ts "$@"
