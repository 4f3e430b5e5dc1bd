#!/usr/bin/env bash
# `npm start`: installs what is missing, brings up Kafka, the schema registry and the database, then
# runs every service until one of them stops or you press Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node.sh
# LEADLINE_SKIP_INFRA=1 runs the services against infrastructure that is already up (tests do).
if [ "${LEADLINE_SKIP_INFRA:-}" != 1 ]; then
  bash scripts/install-deps.sh
  bash scripts/infra/up.sh
fi
npx tsx packages/runtime/src/migrate-cli.ts

# Every service is supervised the same way: when one stops, all stop and `npm start` exits non-zero,
# so no service (above all the SMS gateway, which sends) is ever left running alone. SIGTERM lets
# each drain its in-flight work (requests, the batch being applied, the send under way); one that
# has not stopped after SHUTDOWN_GRACE_SECONDS is killed.
pids=()
alive() {
  local pid
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}
stop_services() {
  trap - EXIT INT TERM
  [ ${#pids[@]} -eq 0 ] && return
  kill -TERM "${pids[@]}" 2>/dev/null || true
  local deadline=$((SECONDS + ${SHUTDOWN_GRACE_SECONDS:-20}))
  while alive && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  kill -KILL "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop_services EXIT
trap 'exit 130' INT TERM

# Each service without an HTTP server of its own serves /metrics on a port of its own (the API on
# PORT): METRICS_PORT_BASE + 0..6, by default PORT + 1021 (9101-9107 beside 8080), so two checkouts
# started on different PORTs do not collide. METRICS_PORT_BASE=off opens none.
metrics_base="${METRICS_PORT_BASE:-$((${PORT:-8080} + 1021))}"
# start_service NAME [METRICS_OFFSET [ENTRY]]: ENTRY is services/NAME/src/main.ts unless given.
start_service() {
  local metrics_port=""
  [ -n "${2:-}" ] && [ "$metrics_base" != off ] && metrics_port=$((metrics_base + $2))
  METRICS_PORT="$metrics_port" node --import tsx "${3:-services/$1/src/main.ts}" &
  pids+=($!)
  echo "$1: pid $!" >&2
}
start_service projector 0
start_service command-api
start_service inbound-decider 1 services/inbound-decider/src/main.ts
start_service sms-gateway 2
start_service sequencer 3
start_service webhook-relay 4
start_service ai-agent 5
start_service carrier-registration 6

if [ -z "${PARTNER_API_KEY:-}" ]; then
  echo "No PARTNER_API_KEY set: create a partner with 'npm run partner -- create --name NAME'." >&2
fi
echo "API on ${PUBLIC_URL:-http://127.0.0.1:${PORT:-8080}}/v1 (docs at /v1/docs)" >&2
echo "Embedded dashboard at ${APP_URL:-${PUBLIC_URL:-http://127.0.0.1:${PORT:-8080}}}/embed?token=… (POST /v1/accounts/:id/embed-token)" >&2
# Whichever service stops first, for whatever reason, takes the others down with it.
status=0
wait -n || status=$?
echo "a service stopped (exit status $status); stopping the others" >&2
exit $((status == 0 ? 1 : status))
