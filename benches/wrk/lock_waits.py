"""Samples what freight's GPS committer thread is waiting on, and what the
store's own threads are doing meanwhile, from /proc (run as root: the kernel
stacks need it). For benches/wrk/stalls.sh (LOCK_WAITS=1).

Usage: lock_waits.py PID SECONDS [INTERVAL_MS]

Every INTERVAL_MS (default 0.5) it reads the committer's current system call
(/proc/PID/task/TID/syscall) and, while that is a futex wait (the thread
blocked on a lock or a condition variable: the committer's idle wait for work
is an epoll_wait, and its own sync an fdatasync), the kernel stack and system
call of every other thread of the store (fjall's workers and flushers). A wait
is one run of samples in the same futex call. At the end it prints the waits
longer than 10 ms, each with what the store's threads were doing during it
(their most frequent system call and kernel function), then the longest wait
and how many passed 10 and 50 ms. A wait that ends while a store thread was
in fsync or fdatasync, and only then, is a lock held through a sync.

With LOCK_WAITS_GDB=1 it also attaches gdb (which stops the process for a
moment) to the first two waits that pass 15 ms, and prints the user-space
stacks of the committer and of each store thread then in a system call: which
lock it is, and who holds it."""

import collections
import os
import re
import subprocess
import sys
import time

FUTEX = 202
SYSCALLS = {0: "read", 1: "write", 7: "poll", 17: "pread64", 18: "pwrite64", 74: "fsync",
            75: "fdatasync", 87: "unlink", 202: "futex", 232: "epoll_wait", 257: "openat",
            263: "unlinkat", 277: "sync_file_range", 82: "rename", 3: "close"}

pid, seconds = int(sys.argv[1]), float(sys.argv[2])
interval = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0.0005
tasks = f"/proc/{pid}/task"


def comm(tid):
    try:
        with open(f"{tasks}/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def syscall(tid):
    """The thread's current system call number and first argument, None
    when it is running in user space or gone."""
    try:
        with open(f"{tasks}/{tid}/syscall") as f:
            fields = f.read().split()
    except OSError:
        return None
    if not fields or fields[0] in ("running", "-1"):
        return None
    return int(fields[0]), fields[1] if len(fields) > 1 else ""


def top_frame(tid):
    """The innermost kernel function of the thread's stack that is not the
    scheduler's own."""
    try:
        with open(f"{tasks}/{tid}/stack") as f:
            lines = f.read().split("\n")
    except OSError:
        return "?"
    for line in lines:
        name = line.split("] ", 1)[-1].split("+", 1)[0]
        if name and not name.startswith(("__schedule", "schedule", "io_schedule", "do_nanosleep")):
            return name
    return "?"


threads = {tid: comm(tid) for tid in os.listdir(tasks)}
committer = [tid for tid, name in threads.items() if name.startswith("freight-gps-co")]
if not committer:
    sys.exit(f"no GPS committer thread in process {pid}: {sorted(set(threads.values()))}")
committer = committer[0]
store = [tid for tid, name in threads.items() if "fjall" in name or "lsm" in name]

waits = []  # (start, seconds, {thread: Counter of (syscall, frame)})
stacks = []  # gdb's user-space stacks of the threads concerned, for the first long waits
use_gdb = os.environ.get("LOCK_WAITS_GDB") == "1"


def user_stacks(tids):
    """gdb's backtraces of threads `tids` (LWP ids) of the process."""
    out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "set pagination off",
                          "-ex", "thread apply all bt 40"], capture_output=True, text=True).stdout
    sections = re.split(r"\n(?=Thread \d+ )", out)
    return [sec for sec in sections if any(f"LWP {t})" in sec for t in tids)]


current = None  # (futex address, start, observations)
stop_at = time.time() + seconds
while time.time() < stop_at:
    now = time.monotonic()
    call = syscall(committer)
    if call is not None and call[0] == FUTEX:
        if current is None or current[0] != call[1]:
            if current is not None:
                waits.append((current[1], now - current[1], current[2]))
            current = (call[1], now, collections.defaultdict(collections.Counter))
        busy = []
        for tid in store:
            other = syscall(tid)
            if other is not None and other[0] not in (FUTEX, 232):
                busy.append(tid)
                current[2][f"{threads[tid]}#{tid}"][(SYSCALLS.get(other[0], str(other[0])), top_frame(tid))] += 1
        if use_gdb and len(stacks) < 2 and now - current[1] > 0.015 and current[0] != "gdb":
            stacks.append((now - current[1], user_stacks([committer] + busy)))
            # This wait has its stacks; gdb's pause is not a wait of its own.
            current = ("gdb", current[1], current[2])
    elif current is not None:
        waits.append((current[1], now - current[1], current[2]))
        current = None
    time.sleep(interval)

long = sorted((w for w in waits if w[1] > 0.010), key=lambda w: w[0])
start = long[0][0] if long else 0
print(f"the GPS committer's futex waits over 10 ms (of {len(waits)} waits sampled):")
for began, length, others in long:
    busy = "; ".join(
        f"{name} in {', '.join(f'{c} ({f}) x{n}' for (c, f), n in counts.most_common(2))}"
        for name, counts in sorted(others.items())
    ) or "no store thread in a system call"
    print(f"  +{began - start:7.1f} s: {length * 1000:6.1f} ms; meanwhile {busy}")
for waited, sections in stacks:
    print(f"user-space stacks {waited * 1000:.0f} ms into a wait (gdb):")
    for section in sections:
        print("\n".join("    " + line for line in section.strip().split("\n")[:28]))
longest = max((w[1] for w in waits), default=0)
print(f"longest futex wait {longest * 1000:.1f} ms; over 10 ms: {sum(w[1] > 0.010 for w in waits)}, "
      f"over 50 ms: {sum(w[1] > 0.050 for w in waits)}")
