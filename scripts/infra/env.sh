# shellcheck shell=bash
# Source me (don't execute): `source scripts/infra/env.sh`
# Exports the connection settings of the local infrastructure started by
# scripts/infra/up.sh. Values already set in the environment win, and the same
# port overrides as up.sh (KAFKA_PORT, SCHEMA_REGISTRY_PORT) are honoured.
# No `set -e` etc. here: this runs inside the caller's shell.

if [ "${LEADLINE_KAFKA_NODES:-1}" = 3 ]; then
  # The three nodes up.sh starts with LEADLINE_KAFKA_NODES=3, and the durability the log then declares.
  _port="${KAFKA_PORT:-9092}"
  export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:${_port},127.0.0.1:$((_port + 2)),127.0.0.1:$((_port + 4))}"
  export KAFKA_REPLICATION_FACTOR="${KAFKA_REPLICATION_FACTOR:-3}"
  unset _port
else
  export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:${KAFKA_PORT:-9092}}"
fi
export SCHEMA_REGISTRY_URL="${SCHEMA_REGISTRY_URL:-http://127.0.0.1:${SCHEMA_REGISTRY_PORT:-8081}/apis/ccompat/v7}"
