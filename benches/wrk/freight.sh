# Sourced by the scripts beside it: starts the freight under measurement on
# fresh storage and seeds it the same way for each of them.
# Needs FREIGHT (the binary), WORK (a scratch directory) and LOADS.

# A scratch directory ($WORK) removed on exit, with every background job of
# the script stopped.
scratch() {
  WORK=$(mktemp -d)
  trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
}

# `scratch`, and the freight binary ($FREIGHT) checked, so a script fails
# before it starts anything when the build is missing.
scratch_and_freight() {
  scratch
  [ -x "$FREIGHT" ] || { echo "no $FREIGHT; build it: cargo build --profile bench --bin freight" >&2; exit 1; }
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# CPU time (user + system, clock ticks) process $1 has used so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# The median of the numbers given (the lower of an even count's middle two).
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }

# Builds benches/bare_handler.rs (bench profile; extra cargo arguments, such as
# `--bin freight`, build in the same invocation) and prints its path, or fails
# saying what to run.
build_bare() {
  local built
  built=$(cargo build --profile bench "$@" --bench bare_handler --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "bare_handler":
        print(m["executable"])')
  [ -n "$built" ] || { echo "the build failed; run: cargo build --profile bench $* --bench bare_handler" >&2; return 1; }
  echo "$built"
}

# With SCYLLA_NODES (contact points, host:port,...) set, freight runs on the
# CQL backend there (--storage scylla), each start in a keyspace of its own made
# by `freight migrate` with SCYLLA_RF replicas (default: one per contact point,
# at most 3); the keyspaces are dropped on exit by nothing: they are named
# bench_<pid>_<n> and a test cluster's data is deleted when it stops.
CQL_KEYSPACES=0
# Migrates a new keyspace on $SCYLLA_NODES and prints its name.
cql_keyspace() {
  CQL_KEYSPACES=$((CQL_KEYSPACES + 1))
  local keyspace="bench_$$_$CQL_KEYSPACES" points
  IFS=, read -ra points <<<"$SCYLLA_NODES"
  local rf=${SCYLLA_RF:-$(( ${#points[@]} < 3 ? ${#points[@]} : 3 ))}
  "$FREIGHT" migrate --scylla-nodes "$SCYLLA_NODES" --scylla-keyspace "$keyspace" \
    --replication "{'class': 'NetworkTopologyStrategy', 'replication_factor': $rf}" >&2 \
    || { echo "freight migrate failed on $SCYLLA_NODES" >&2; return 1; }
  echo "$keyspace"
}

# The `serve` arguments for the storage: none (embedded, in --data-dir), or
# the CQL backend over a new keyspace (see cql_keyspace).
storage_args() {
  [ -n "${SCYLLA_NODES:-}" ] || return 0
  local keyspace internal
  keyspace=$(cql_keyspace) || return 1
  internal=$(free_port)
  echo --storage scylla --scylla-nodes "$SCYLLA_NODES" --scylla-keyspace "$keyspace" \
    --cluster-secret bench-cluster-secret-of-32-characters \
    --internal-listen "127.0.0.1:$internal" --internal-address "127.0.0.1:$internal"
}

# Starts freight with $1 workers in $WORK/data-$1, creates an enterprise account
# and a read/write key ($KEY), and $LOADS assigned loads with ten fixes each,
# whose ids go to $WORK/loads. Sets DATA, API_PORT, ADMIN_PORT, FREIGHT_PID.
# $2 (optional) names a second instance: its data in $WORK/data-$2-$1 and its
# load ids in $WORK/loads-$2. Each device's allowance is raised far past what
# a benchmark sends: the runs measure the ingest path, not its refusals.
start_freight() {
  local workers=$1 name=${2:-}
  DATA="$WORK/data-${name:+$name-}$workers"
  API_PORT=$(free_port); ADMIN_PORT=$(free_port)
  local storage
  storage=$(storage_args) || exit 1
  # shellcheck disable=SC2086 # storage_args prints words without spaces
  "$FREIGHT" serve $storage --data-dir "$DATA" --listen "127.0.0.1:$API_PORT" \
    --admin-listen "127.0.0.1:$ADMIN_PORT" --workers "$workers" --no-bootstrap-key \
    --device-positions-per-second 1000 --device-burst 1000000 \
    >"$WORK/freight${name:+-$name}.log" 2>&1 &
  FREIGHT_PID=$!
  for _ in $(seq 100); do [ -f "$DATA/admin.token" ] && curl -sk "https://localhost:$API_PORT/v1" -o /dev/null && break; sleep 0.1; done
  local admin=(--data-dir "$DATA" --admin-url "http://127.0.0.1:$ADMIN_PORT" --json)
  local account
  account=$("$FREIGHT" accounts create --name bench --plan enterprise --requests-per-hour 4000000000 "${admin[@]}" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  KEY=$("$FREIGHT" keys create --account "$account" --permissions read,write "${admin[@]}" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
  # STOPS per load (default 2); the baseline's BASELINE_STOPS, if given.
  local stops=${STOPS:-2}
  [ "$name" = baseline ] && stops=${BASELINE_STOPS:-$stops}
  python3 benches/wrk/setup.py "$API_PORT" "$DATA/tls/cert.pem" "$KEY" "$LOADS" "$stops" >"$WORK/loads${name:+-$name}"
}

# Fixes the freight on $ADMIN_PORT has answered with outcome $1 so far
# (stored, duplicate or refused). A run of fresh fixes that adds to the
# duplicates measured the cheaper duplicate path, not ingest.
gps_points() {
  curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" \
    | awk -v outcome="$1" '$1 == "freight_gps_points_total{outcome=\"" outcome "\"}" {print $2}'
}

# What the store of the freight on $ADMIN_PORT has done since it started: GPS
# flushes, compactions and seconds of write stall.
store_activity() {
  curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk '
    $1 == "freight_store_flushes_total{keyspace=\"gps_track\"}" {f = $2}
    $1 == "freight_store_compactions_total{keyspace=\"gps_track\"}" {c = $2}
    $1 == "freight_store_write_stall_seconds_total" {s = $2}
    END {printf "%d GPS flushes, %d GPS compactions, %.3f s of write stall", f, c, s}'
}

# How long the GPS batches of the freight on $ADMIN_PORT took to go into the
# store before their syncs (freight_store_gps_write_seconds): where a wait on
# the store's locks or a write stall is felt. "-" from a build without it.
store_write_waits() {
  curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk '
    $1 ~ /^freight_store_gps_write_seconds_bucket/ {
      match($1, /le="[^"]*"/); le[++k] = substr($1, RSTART + 4, RLENGTH - 5); below[k] = $2
    }
    $1 == "freight_store_gps_write_seconds_count" {count = $2}
    END {
      if (count == "") { print "-"; exit }
      # The bounds come in order: the first that holds every batch.
      for (i = 1; i <= k && below[i] < count; i++) {}
      for (j = 1; j <= k; j++) { if (le[j] == "0.01") over10 = count - below[j]; if (le[j] == "0.05") over50 = count - below[j] }
      printf "%d GPS batches written, %d over 10 ms, %d over 50 ms, the longest at most %s s", count, over10, over50, le[i]
    }'
}

# Fixes whose duplicate check has read the store so far (late fixes older than
# the recent times kept in memory); "-" from a build without the counter.
point_lookups() {
  curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" \
    | awk '$1 == "freight_point_lookups_total" {found = $2} END {print found == "" ? "-" : found}'
}
