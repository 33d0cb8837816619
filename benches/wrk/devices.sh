#!/usr/bin/env bash
# Device ingest against the API's own ingest, per fix, in one run of one
# freight: wrk (an independent client, in a process of its own) posts
#   - single positions as Traccar Client 7 does (osmand.lua: POST, the query
#     string, an empty body) beside the API's single fixes (fix.lua), and
#   - Overland batches of 100 locations (overland.lua) beside API batches of
#     100 fixes of one load (batch100.lua),
# alternating API, device, API, device. Each load has a device of its own
# attached (device_setup.py), so a position is one fix either way. Prints each
# pair's fixes/s and the device path's ratio to the API's, then the medians.
#
#   benches/wrk/devices.sh      # about 3 minutes after the release build
#
# Knobs: ROUNDS (pairs per shape, default 3), SECONDS_PER_RUN (default 8),
# LOADS (default 1000), WORKERS (freight's HTTP workers, default 1),
# CONNECTIONS (wrk -c, default 32), FREIGHT (the binary to measure; unset,
# target/release/freight, built first). `benches/wrk/compare.sh` runs this
# script last, on its own build (`ONLY=devices` for this comparison alone).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 1; }

ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-8}
LOADS=${LOADS:-1000}
WORKERS=${WORKERS:-1}
CONNECTIONS=${CONNECTIONS:-32}

if [ -z "${FREIGHT:-}" ]; then
  echo "building (release)..." >&2
  cargo build --release --bin freight >&2
  FREIGHT=target/release/freight
fi
. benches/wrk/freight.sh
scratch
start_freight "$WORKERS"
python3 benches/wrk/device_setup.py "$API_PORT" "$DATA/tls/cert.pem" "$KEY" "$WORK/loads" >"$WORK/tokens"
export WRK_LOADS="$WORK/loads" WRK_TOKENS="$WORK/tokens" WRK_KEY="$KEY"

# Runs wrk with script $1; prints "requests/s non-2xx".
run() {
  local out="$WORK/wrk.out"
  wrk -t1 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency -s "benches/wrk/$1" \
    "https://localhost:$API_PORT" >"$out"
  local rate errors
  rate=$(python3 benches/wrk/wrk_figures.py "$out" | cut -d' ' -f1)
  errors=$(grep -oE 'Non-2xx or 3xx responses: [0-9]+' "$out" | grep -oE '[0-9]+$' || echo 0)
  echo "$rate $errors"
}

# Compares script $1 (the API's) with $2 (the device's), $3 fixes a request.
compare() {
  local api=$1 device=$2 per=$3 ratios=()
  echo "== $api vs $device ($per fix(es) a request, ${WORKERS} worker(s), wrk -t1 -c$CONNECTIONS)"
  for round in $(seq "$ROUNDS"); do
    read -r api_rate api_errors < <(run "$api")
    read -r device_rate device_errors < <(run "$device")
    local ratio
    ratio=$(python3 -c "print(f'{$device_rate / $api_rate:.3f}')")
    ratios+=("$ratio")
    printf '  round %d: api %.0f fixes/s (%s non-2xx), device %.0f fixes/s (%s non-2xx), ratio %s\n' \
      "$round" "$(python3 -c "print($api_rate * $per)")" "$api_errors" \
      "$(python3 -c "print($device_rate * $per)")" "$device_errors" "$ratio"
  done
  echo "  median device/api: $(median "${ratios[@]}")"
}

compare fix.lua osmand.lua 1
compare batch100.lua overland.lua 100

# What became of the devices' positions: they must be stored fixes, not
# duplicates or positions reaching no load, or the comparison is of nothing.
echo "== device positions by outcome (freight_device_positions_total)"
curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | grep '^freight_device_positions_total' | grep -v ' 0$' | sed 's/^/  /'
curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | grep '^freight_device_refusals_total' | sed 's/^/  refused: /' || true
echo "== every fix, API's and devices' (freight_gps_points_total): duplicates would flatter a side"
curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | grep '^freight_gps_points_total' | sed 's/^/  /'
