# shellcheck shell=bash
# Source me (don't execute): `source scripts/infra/env.sh`
# Exports the connection settings of the local infrastructure started by
# scripts/infra/up.sh. Values already set in the environment win, and the same
# port overrides as up.sh (KAFKA_PORT, SCHEMA_REGISTRY_PORT) are honoured.
# No `set -e` etc. here: this runs inside the caller's shell.

export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:${KAFKA_PORT:-9092}}"
export SCHEMA_REGISTRY_URL="${SCHEMA_REGISTRY_URL:-http://127.0.0.1:${SCHEMA_REGISTRY_PORT:-8081}/apis/ccompat/v7}"
