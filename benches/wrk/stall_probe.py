"""Times one fresh GPS fix every 10 ms on a connection of its own, and notes
each table file the store gains (a flush, or a compaction starting to write)
and loses (a compaction's end: its inputs are deleted when it commits), for
benches/wrk/stalls.sh.

Usage: stall_probe.py PORT CERT KEY LOAD DATA_DIR SECONDS LOG
Writes every request ("P <unix time> <ms>"), every new table file ("F <unix
time> <path>"), every deleted one ("D <unix time> <path>") and every look at
which a table file had grown since the one before ("W <unix time> <path>": it
is being written, by a flush or a compaction) to LOG, then
prints, for each new table, the slowest probe request within a second before
to half a second after it, the probe's p99 and worst in each minute, over the
whole run its p99.9, worst, the requests over 10, 20, 50 and 100 ms and the
number of new table files, and for each request over 50 ms what the store did
near it (tables created or deleted from a second before it was sent to when
it was answered, and tables being written while it waited: a compaction
writes for tens of seconds between its first new table and its end)."""

import datetime
import http.client
import json
import os
import ssl
import sys
import threading
import time

port, cert, key, load, data, seconds, log_path = sys.argv[1:8]
stop_at = time.time() + float(seconds)
lock = threading.Lock()
requests = []  # (sent at, ms)
flushes = []  # (noticed at, path)
deletions = []  # (noticed at, path)
growing = []  # (noticed at, path): the file had grown since the look before


def probe():
    context = ssl.create_default_context(cafile=cert)
    context.check_hostname = False
    connection = http.client.HTTPSConnection("localhost", int(port), context=context)
    # Five minutes back, a millisecond apart: never a timestamp wrk's fix.lua
    # sends (ten minutes back, microseconds apart), so never a duplicate.
    base = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    n = 0
    while time.time() < stop_at:
        n += 1
        stamp = (base + datetime.timedelta(milliseconds=n)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        body = json.dumps({"lat": 32.1, "lng": -96.1, "timestamp": stamp})
        sent = time.time()
        connection.request("POST", f"/v1/loads/{load}/tracking", body,
                           {"Content-Type": "application/json", "Authorization": "Bearer " + key})
        response = connection.getresponse()
        response.read()
        took = time.time() - sent
        if response.status != 201:
            raise SystemExit(f"the probe's fix was answered {response.status}")
        with lock:
            requests.append((sent, took * 1000))
        time.sleep(max(0.0, 0.01 - took))


def tables():
    seen = None  # path -> size at the look before
    while time.time() < stop_at:
        now = time.time()
        found = {}
        for root, _, names in os.walk(os.path.join(data, "store", "keyspaces")):
            if os.sep + "tables" in root:
                for name in names:
                    path = os.path.join(root, name)
                    try:
                        found[path] = os.path.getsize(path)
                    except OSError:  # deleted between the listing and the look
                        pass
        if seen is not None:
            with lock:
                flushes.extend((now, path[len(data) + 1:]) for path in sorted(found.keys() - seen.keys()))
                deletions.extend((now, path[len(data) + 1:]) for path in sorted(seen.keys() - found.keys()))
                growing.extend((now, path[len(data) + 1:]) for path, size in sorted(found.items())
                               if path in seen and size > seen[path])
        seen = found
        time.sleep(0.1)


threads = [threading.Thread(target=probe), threading.Thread(target=tables)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()

with open(log_path, "w") as log:
    for sent, ms in requests:
        log.write(f"P {sent:.4f} {ms:.2f}\n")
    for at, path in flushes:
        log.write(f"F {at:.4f} {path}\n")
    for at, path in deletions:
        log.write(f"D {at:.4f} {path}\n")
    for at, path in growing:
        log.write(f"W {at:.4f} {path}\n")
for at, path in flushes:
    near = [ms for sent, ms in requests if at - 1.0 <= sent <= at + 0.5]
    print(f"  flush ({path}): slowest probe request near it {max(near, default=0):.1f} ms")
latencies = sorted(ms for _, ms in requests)
# Per minute of the run: the probe's p99 and worst (a minute with a
# compaction in it against one without).
if requests:
    first = requests[0][0]
    minutes = {}
    for sent, ms in requests:
        minutes.setdefault(int((sent - first) // 60), []).append(ms)
    print("  probe per minute (p99/worst ms): " + ", ".join(
        f"{sorted(v)[int(len(v) * 0.99)]:.1f}/{max(v):.1f}" for _, v in sorted(minutes.items())))
over = {limit: sum(ms > limit for ms in latencies) for limit in (10, 20, 50, 100)}
print(f"  probe: {len(latencies)} requests, p99.9 {latencies[int(len(latencies) * 0.999)]:.1f} ms, "
      f"worst {latencies[-1]:.1f} ms; over 10/20/50/100 ms: "
      f"{over[10]}/{over[20]}/{over[50]}/{over[100]}; {len(flushes)} new table files")


def keyspace(path):
    return path.split(os.sep)[2]


# Keyspace directories are numbered; the one that gains the most tables is
# the GPS series.
counts = {}
for _, path in flushes:
    counts[keyspace(path)] = counts.get(keyspace(path), 0) + 1
gps = max(counts, key=counts.get, default=None)


def keyspaces(events, start, end):
    """The keyspaces of the table events noticed in [start, end]: "gps" and
    how many others."""
    names = {keyspace(path) for at, path in events if start <= at <= end}
    others = len(names - {gps})
    return ", ".join(filter(None, ["gps" if gps in names else "",
                                   f"{others} small keyspace{'s' * (others > 1)}" if others else ""]))


# The table watcher looks every 100 ms, so an event is noticed up to 0.1 s
# after it happened: the window reaches past the answer by that much.
slow = [(sent, ms) for sent, ms in requests if ms > 50]
if slow:
    print("  probe requests over 50 ms, and the store's table events near them:")
    quiet = 0
    for sent, ms in slow:
        end = sent + ms / 1000 + 0.1
        created = keyspaces(flushes, sent - 1.0, end)
        deleted = keyspaces(deletions, sent - 1.0, end)
        written = keyspaces(growing, sent, end)
        near = "; ".join(filter(None, [created and f"new tables in {created}",
                                       deleted and f"tables deleted in {deleted}",
                                       written and f"tables being written in {written}"]))
        quiet += not near
        print(f"    +{sent - requests[0][0]:6.1f} s: {ms:6.1f} ms  {near or 'no table event'}")
    print(f"  of {len(slow)} requests over 50 ms, {quiet} came with no table created, deleted or being written")
