#!/usr/bin/env bash
# Where single-fix ingest's latency tail comes from. freight (1 worker, the
# headline shape of compare.sh) takes wrk -t1 -c32 of fresh fixes for WINDOWS
# runs of WINDOW_SECONDS each, while benches/wrk/stall_probe.py sends one more
# fix every 10 ms on a connection of its own, timing each, and notes every
# table file the store gains (a memtable flush). Prints each run's p99 and
# worst, and for each flush the slowest probe request around it; the probe's
# log, with every request's time, is kept in
# target/stalls/probe-<subject>-<start time>.log (one per run: a later run
# does not overwrite the one a note cites).
#
#   cargo build --profile bench --bin freight
#   benches/wrk/stalls.sh          # about 90 s; needs wrk (apt-get install wrk)
#
# Knobs (environment): FREIGHT (the binary, default target/release/freight),
# WINDOWS (default 14), WINDOW_SECONDS (default 5), LOADS (default 1000),
# BARE=durable (the same profile of the bare handler made durable, in place of
# freight: what this machine's fsyncs and shared CPUs cost any durable handler;
# builds benches/bare_handler.rs), BARE=also (freight's profile, then the
# durable bare handler's on the same certificate and loads: both in one run),
# BARE_HANDLER (with BARE: a bare handler already built, instead of building it),
# LOCK_WAITS=1 (benches/wrk/lock_waits.py samples what freight's GPS committer
# waits on through freight's profile, and what the store's threads do
# meanwhile; root, and it takes a share of a CPU: not for the measured runs).
# After freight's profile it prints what its store did (freight.sh's
# store_activity and store_write_waits).
# At 30,000 fixes/s the GPS keyspace flushes a memtable every 18 s or so, so
# the default 70 s sees three or four flushes.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 1; }

FREIGHT=${FREIGHT:-target/release/freight}
WINDOWS=${WINDOWS:-14}
WINDOW_SECONDS=${WINDOW_SECONDS:-5}
LOADS=${LOADS:-1000}
STARTED=$(date -u +%Y%m%dT%H%M%SZ)

source benches/wrk/freight.sh
scratch_and_freight
[ -z "${BARE:-}" ] || BUILT_BARE=${BARE_HANDLER:-$(build_bare)}
start_freight 1
mkdir -p target/stalls

# profile NAME: wrk's windows and the probe against the server on $API_PORT.
profile() {
  local name=$1
  python3 benches/wrk/stall_probe.py "$API_PORT" "$DATA/tls/cert.pem" "$KEY" "$(head -n 1 "$WORK/loads")" \
    "$DATA" $((WINDOWS * WINDOW_SECONDS + 1)) "target/stalls/probe-${name// /-}-$STARTED.log" >"$WORK/probe.out" &
  local probe=$!
  echo "$name, 1 worker, wrk -t1 -c32, fresh fixes, ${WINDOWS} runs of ${WINDOW_SECONDS} s:"
  for window in $(seq "$WINDOWS"); do
    WRK_LOADS="$WORK/loads" WRK_KEY="$KEY" wrk --latency -t1 -c32 -d"${WINDOW_SECONDS}s" \
      -s benches/wrk/fix.lua "https://localhost:$API_PORT" >"$WORK/wrk.out"
    read -r rate _ p99 worst < <(python3 benches/wrk/wrk_figures.py "$WORK/wrk.out")
    printf '  run %2d: %6.0f fixes/s, p99 %6.2f ms, worst %6.2f ms\n' "$window" "$rate" "$p99" "$worst"
  done
  wait "$probe"
  echo "the probe (one fix every 10 ms besides wrk's):"
  cat "$WORK/probe.out"
}

# The durable bare handler in freight's place: freight made the certificate
# and the seeded loads; the handler answers each fix once it is appended and
# fdatasynced (its journal on the same disk).
start_bare() {
  kill "$FREIGHT_PID"; wait "$FREIGHT_PID" 2>/dev/null || true
  API_PORT=$(free_port)
  BARE_SYNC_DIR=$(mktemp -d -p "$WORK") "$BUILT_BARE" serve "127.0.0.1:$API_PORT" "$DATA/tls/cert.pem" "$DATA/tls/key.pem" 1 &
  sleep 0.5
}

# freight's store over the whole profile: its flushes and compactions, and
# the longest any GPS batch spent going into it (its locks, its stalls).
freight_profile() {
  local sampler=
  if [ -n "${LOCK_WAITS:-}" ]; then
    python3 benches/wrk/lock_waits.py "$FREIGHT_PID" $((WINDOWS * WINDOW_SECONDS)) >"$WORK/lock_waits.out" &
    sampler=$!
  fi
  profile freight
  echo "freight's store: $(store_activity); $(store_write_waits)"
  [ -z "$sampler" ] || { wait "$sampler"; cat "$WORK/lock_waits.out"; }
}

case "${BARE:-}" in
  "") freight_profile ;;
  durable) start_bare; profile "the durable bare handler" ;;
  also) freight_profile; sync; start_bare; profile "the durable bare handler" ;;
  *) echo "BARE is durable, also or unset" >&2; exit 1 ;;
esac
