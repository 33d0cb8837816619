#!/usr/bin/env bash
# Does `freight loadgen` measure what wrk measures? One freight server (1
# worker, release build), single fresh GPS fixes with 32 requests in flight,
# driven alternately by wrk (-t1 -c32, benches/wrk/fix.lua) and by the loadgen
# in closed loop (benches/scenarios/wrk-shape.toml); prints each pair's
# throughput and the loadgen's share of wrk's. They should agree within 15%.
#
#   benches/wrk/loadgen_agrees.sh      # about a minute; needs wrk and a release build
#
# Knobs: ROUNDS (default 2), SECONDS_PER_RUN (default 10).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 1; }
ROUNDS=${ROUNDS:-2}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
FREIGHT=target/release/freight
LOADS=1000
source benches/wrk/freight.sh
scratch_and_freight
start_freight 1

for round in $(seq "$ROUNDS"); do
  WRK_LOADS="$WORK/loads" WRK_KEY="$KEY" wrk --latency -t1 -c32 -d"${SECONDS_PER_RUN}s" \
    -s benches/wrk/fix.lua "https://localhost:$API_PORT" >"$WORK/wrk.out"
  FREIGHT_API_KEY="$KEY" "$FREIGHT" loadgen --json --scenario benches/scenarios/wrk-shape.toml \
    --duration "$SECONDS_PER_RUN" --base-url "https://localhost:$API_PORT" \
    --cacert "$DATA/tls/cert.pem" >"$WORK/loadgen.json"
  python3 - "$(python3 benches/wrk/wrk_figures.py "$WORK/wrk.out")" "$WORK/loadgen.json" "$round" <<'PY'
import json, sys
wrk, _, wrk_p99, _ = (float(f) for f in sys.argv[1].split())
report = json.load(open(sys.argv[2]))
fix = next(o for o in report["summary"]["operations"] if o["operation"] == "fix")
errors = sum(fix["errors"].values())
print(f"round {sys.argv[3]}: wrk {wrk:.0f}/s p99 {wrk_p99:.2f} ms | loadgen {fix['per_second']:.0f}/s "
      f"p99 {fix['p99_ms']:.2f} ms, {errors} errors | loadgen/wrk {fix['per_second'] / wrk:.2f}")
PY
done
