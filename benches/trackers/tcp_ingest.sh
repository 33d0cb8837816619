#!/usr/bin/env bash
# Tracker ingest through the TCP listener, measured by `freight loadgen
# --protocol` in its own process: TRUCKS units (default 1,000) each sending a
# packet of RECORDS positions (default 10) every FIX_EVERY seconds (default 1)
# for SECONDS_PER_RUN (default 20), waiting for each acknowledgement.
# PROTOCOL=teltonika (default) or gt06. Prints packets and records a second
# acknowledged, the acknowledgement latency (from when each packet was due) and
# the connections held.
#
#   benches/trackers/tcp_ingest.sh            # needs the release build
set -euo pipefail
cd "$(dirname "$0")/../.."
FREIGHT=${FREIGHT:-target/release/freight}
TRUCKS=${TRUCKS:-1000} RECORDS=${RECORDS:-10} FIX_EVERY=${FIX_EVERY:-1}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-20} PROTOCOL=${PROTOCOL:-teltonika}
LOADS=0
source benches/wrk/freight.sh
scratch_and_freight
ulimit -n "$(ulimit -Hn)"
TRACKER_PORT=$(free_port)
FREIGHT_TCP_MAX_CONNECTIONS_PER_ADDRESS=$((TRUCKS + 10)) \
  FREIGHT_TCP_INGEST="$PROTOCOL=127.0.0.1:$TRACKER_PORT" start_freight "${WORKERS:-1}"
"$FREIGHT" loadgen --base-url "https://localhost:$API_PORT" --key "$KEY" --cacert "$DATA/tls/cert.pem" \
  --protocol "$PROTOCOL" --tracker-addr "127.0.0.1:$TRACKER_PORT" --records "$RECORDS" \
  --trucks "$TRUCKS" --fix-every "$FIX_EVERY" --duration "$SECONDS_PER_RUN" \
  --dashboards 0 --streams 0 --clients 0
