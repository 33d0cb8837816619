#!/usr/bin/env bash
# Does a bigger fleet cost freight more per fix? `freight loadgen` offers one
# open-loop rate of single fixes (no duplicates, no late fixes, nobody
# reading) from each fleet size in TRUCKS in turn, each against a fresh
# freight (2 workers, 256 connections), and prints freight's CPU time per
# stored fix over the measured part once every truck has sent a fix (from
# /proc and freight's own freight_gps_points_total) beside the loadgen's rate
# and latencies. Sizes
# alternate, so a drift of the machine shows as a difference between rounds.
#
#   cargo build --profile bench --bin freight
#   benches/wrk/fleet_size.sh          # about 10 minutes
#
# Knobs: FREIGHT (default target/release/freight), TRUCKS (default
# "2000 20000 2000 20000"), RATE (fixes/s, default 8000), MEASURE_SECONDS
# (the measured part, default 40), SETTLE (seconds between the set-up and the
# measured part, default 30).
set -euo pipefail
cd "$(dirname "$0")/../.."
FREIGHT=${FREIGHT:-target/release/freight}
TRUCKS=${TRUCKS:-"2000 20000 2000 20000"}
RATE=${RATE:-8000}
SECONDS_MEASURED=${MEASURE_SECONDS:-40}
SETTLE=${SETTLE:-30}
LOADS=1
source benches/wrk/freight.sh
scratch_and_freight

cat >"$WORK/fixes-only.toml" <<EOF
trucks = 2000
fix_every_secs = 1.0
duration_secs = $SECONDS_MEASURED
duplicate_share = 0.0
out_of_order_share = 0.0
offline_share = 0.0
dashboards = 0
streams = 0
clients = 0
EOF

echo "freight, 2 workers, 256 connections, $RATE fixes/s offered for ${SECONDS_MEASURED} s:"
for trucks in $TRUCKS; do
  start_freight 2
  every=$(python3 -c "print($trucks / $RATE)")
  "$FREIGHT" loadgen --json --scenario "$WORK/fixes-only.toml" --trucks "$trucks" --fix-every "$every" \
    --settle "$SETTLE" --connections 256 --base-url "https://localhost:$API_PORT" \
    --cacert "$DATA/tls/cert.pem" --key "$KEY" >"$WORK/report.json" &
  loadgen=$!
  # A sample a second (time, freight's CPU ticks, fixes stored) until the
  # loadgen ends; the measured part is its last SECONDS_MEASURED of them.
  : >"$WORK/samples"
  while kill -0 "$loadgen" 2>/dev/null; do
    echo "$(awk '{print $14 + $15}' "/proc/$FREIGHT_PID/stat") $(gps_points stored)" >>"$WORK/samples"
    sleep 1
  done
  wait "$loadgen"
  python3 - "$WORK/report.json" "$WORK/samples" "$trucks" "$SECONDS_MEASURED" "$(getconf CLK_TCK)" "$RATE" <<'PY'
import json, sys
report, samples, trucks, seconds, tck = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rows = [[float(v) for v in line.split()] for line in open(samples) if len(line.split()) == 2]
# From the second after every truck has sent its first fix (a load's first fix
# starts its actor: a cost of the fleet's arrival, not of its size) to two
# seconds before the end (no shutdown).
every = trucks / float(sys.argv[6])
part = rows[-seconds + int(every) + 2:-2]
ticks, fixes = part[-1][0] - part[0][0], part[-1][1] - part[0][1]
fix = next(o for o in json.load(open(report))["summary"]["operations"] if o["operation"] == "fix")
errors = sum(fix["errors"].values())
print(f"  {trucks:>6} trucks: {ticks / tck * 1e6 / max(fixes, 1):5.1f} us of freight's CPU per stored fix; "
      f"loadgen {fix['per_second']:.0f} fixes/s, p50 {fix['p50_ms']:.1f} ms, p99 {fix['p99_ms']:.1f} ms, "
      f"errors {errors}")
PY
  kill "$FREIGHT_PID"; wait "$FREIGHT_PID" 2>/dev/null || true
  rm -rf "$DATA"; sync
done
