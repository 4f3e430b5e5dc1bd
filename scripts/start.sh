#!/usr/bin/env bash
# `npm start`: installs what is missing, brings up Kafka, the schema registry and the database, then
# runs every service until one of them stops or you press Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/infra/up.sh
npx tsx packages/runtime/src/migrate-cli.ts

pids=()
stop_services() {
  [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop_services EXIT
trap 'exit 130' INT TERM

node --import tsx services/projector/src/main.ts &
pids+=($!)
node --import tsx services/command-api/src/main.ts &
pids+=($!)
node --import tsx services/sms-gateway/src/main.ts &
pids+=($!)
node --import tsx services/webhook-relay/src/main.ts &
pids+=($!)
node --import tsx services/ai-agent/src/main.ts &
pids+=($!)

if [ -z "${PARTNER_API_KEY:-}" ]; then
  echo "No PARTNER_API_KEY set: create a partner with 'npm run partner -- create --name NAME'." >&2
fi
echo "API on ${PUBLIC_URL:-http://127.0.0.1:${PORT:-8080}}/v1 (docs at /v1/docs)" >&2
# Whichever service stops first takes the others down with it.
wait -n
