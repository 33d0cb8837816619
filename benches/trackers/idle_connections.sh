#!/usr/bin/env bash
# What an idle tracker connection costs: N Teltonika units (default 10,000)
# log in to one freight and stay, and its resident memory is read before and
# after (benches/trackers/idle_connections.py; the target is at most 16 KiB
# a connection). Needs the release build (cargo build --release).
#
#   benches/trackers/idle_connections.sh            # N=10000; about a minute
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-10000}
FREIGHT=${FREIGHT:-target/release/freight}
LOADS=0
source benches/wrk/freight.sh
scratch_and_freight
# Both ends hold a descriptor a connection.
ulimit -n "$(ulimit -Hn)"
TRACKER_PORT=$(free_port)
# Every unit connects from 127.0.0.1: the per-address cap is lifted.
FREIGHT_TCP_MAX_CONNECTIONS_PER_ADDRESS=$((N + 10)) FREIGHT_TCP_MAX_CONNECTIONS=$((N + 10)) \
  FREIGHT_TCP_INGEST="teltonika=127.0.0.1:$TRACKER_PORT" start_freight 1
python3 benches/trackers/idle_connections.py "https://localhost:$API_PORT" "$KEY" "$DATA/tls/cert.pem" \
  "127.0.0.1:$TRACKER_PORT" "$FREIGHT_PID" "http://127.0.0.1:$ADMIN_PORT" "$N"
