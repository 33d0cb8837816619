"""What an idle tracker connection costs freight: N Teltonika units log in and
stay connected, and freight's resident memory is read before and after
(/proc/<pid>/status, VmRSS). Started by benches/trackers/idle_connections.sh.

    idle_connections.py <api-base> <key> <cacert> <tracker host:port> <freight pid> <admin-base> <n>

Each unit needs a device with its IMEI as identifier (an unknown IMEI is
refused and closed, so it would not stay): they are created first through the
API, 32 at a time.
"""

import asyncio
import concurrent.futures
import http.client
import json
import os
import resource
import ssl
import sys
import time
import urllib.parse
import urllib.request

BASE, KEY, CA, TRACKER, PID, ADMIN, N = sys.argv[1:8]
N = int(N)
HOST, PORT = TRACKER.rsplit(":", 1)
PREFIX = f"35{os.getpid() % 100000:05d}"


def imei(i):
    return f"{PREFIX}{i:08d}"


def create_devices(indexes):
    url = urllib.parse.urlparse(BASE)
    context = ssl.create_default_context(cafile=CA)
    context.check_hostname = False
    connection = http.client.HTTPSConnection(url.hostname, url.port, context=context)
    for i in indexes:
        body = json.dumps({"name": f"Unit {i}", "identifier": imei(i)})
        connection.request("POST", "/v1/devices", body, {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
        answer = connection.getresponse()
        text = answer.read()
        if answer.status != 201:
            raise SystemExit(f"creating device {i}: {answer.status} {text[:200]!r}")


def rss_kib():
    with open(f"/proc/{PID}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("no VmRSS")


def connections_gauge():
    page = urllib.request.urlopen(ADMIN + "/metrics").read().decode()
    for line in page.splitlines():
        if line.startswith('freight_tcp_connections{protocol="teltonika"}'):
            return float(line.split()[-1])
    return None


async def unit(i, held, failed, release):
    try:
        reader, writer = await asyncio.open_connection(HOST, int(PORT))
        code = imei(i).encode()
        writer.write(len(code).to_bytes(2, "big") + code)
        await writer.drain()
        if await reader.readexactly(1) != b"\x01":
            raise ConnectionError("refused")
    except (OSError, asyncio.IncompleteReadError) as error:
        failed.append(f"unit {i}: {error!r}")
        return
    held.append(writer)
    await release.wait()
    writer.close()


async def hold_all():
    held, failed, release = [], [], asyncio.Event()
    tasks = []
    for start in range(0, N, 500):
        batch = [asyncio.create_task(unit(i, held, failed, release)) for i in range(start, min(N, start + 500))]
        tasks += batch
        await asyncio.sleep(0.05)
    while len(held) + len(failed) < N:
        await asyncio.sleep(0.1)
    if failed:
        release.set()
        raise SystemExit(f"{len(failed)} of {N} units not held, e.g. {failed[0]}")
    await asyncio.sleep(5)
    after = rss_kib()
    gauge = connections_gauge()
    release.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return after, gauge


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        list(pool.map(create_devices, [range(k, N, 32) for k in range(32)]))
    print(f"{N} devices created in {time.time() - started:.1f} s", file=sys.stderr)
    time.sleep(2)
    before = rss_kib()
    after, gauge = asyncio.run(hold_all())
    print(f"{N} idle Teltonika connections held (freight_tcp_connections {gauge:.0f}): "
          f"freight's RSS {before / 1024:.1f} -> {after / 1024:.1f} MiB, "
          f"{(after - before) / N:.1f} KiB per connection")


main()
