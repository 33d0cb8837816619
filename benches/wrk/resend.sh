#!/usr/bin/env bash
# A batch sent again and again: wrk (an independent client, in a process of
# its own) posts one fixed body of 1,000 fixes (resend.lua: 100 a second apart
# for each of 10 loads) for SECONDS_PER_RUN. The first request stores them;
# every later one is all duplicates, as a device retrying after lost answers
# sends. Prints requests/s and the store lookups per request that freight's
# duplicate checks made (`freight_point_lookups_total`).
#
#   FREIGHT=<binary> benches/wrk/resend.sh     # about 20 s
#
# Knobs: SECONDS_PER_RUN (default 15), CONNECTIONS (wrk -c, default 8),
# FREIGHT (the binary; unset, target/release/freight, built first). For an
# A/B, run it on each build in turn, alternating.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 1; }

SECONDS_PER_RUN=${SECONDS_PER_RUN:-15}
CONNECTIONS=${CONNECTIONS:-8}
LOADS=100
if [ -z "${FREIGHT:-}" ]; then
  echo "building (release)..." >&2
  cargo build --release --bin freight >&2
  FREIGHT=target/release/freight
fi
. benches/wrk/freight.sh
scratch_and_freight
start_freight 1

before=$(point_lookups)
WRK_LOADS="$WORK/loads" WRK_KEY="$KEY" wrk -t1 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" \
  -s benches/wrk/resend.lua "https://localhost:$API_PORT" >"$WORK/wrk.out"
after=$(point_lookups)
requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
rate=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.out")
per_request=$(python3 -c "print(round(($after - $before) / $requests, 1))")
echo "$(basename "$FREIGHT"): $rate requests/s ($requests), store lookups $per_request/request;" \
  "fixes stored $(gps_points stored), duplicates $(gps_points duplicate)"
