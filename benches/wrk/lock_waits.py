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
and how many passed 10 and 50 ms. A wait through most of which one store thread
sat in fsync, fdatasync or unlink points at a lock held through that I/O
(the committer's own futex waits for a sync another writer runs are short).

It cannot name the lock: the kernel stack of a futex wait is the same for
every lock (attaching gdb when a wait passes 15 ms was tried: it takes longer
than the wait)."""

import collections
import os
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
long = sorted((w for w in waits if w[1] > 0.010), key=lambda w: w[0])
start = long[0][0] if long else 0
print(f"the GPS committer's futex waits over 10 ms (of {len(waits)} waits sampled):")
for began, length, others in long:
    busy = "; ".join(
        f"{name} in {', '.join(f'{c} ({f}) x{n}' for (c, f), n in counts.most_common(2))}"
        for name, counts in sorted(others.items())
    ) or "no store thread in a system call"
    print(f"  +{began - start:7.1f} s: {length * 1000:6.1f} ms; meanwhile {busy}")
longest = max((w[1] for w in waits), default=0)
print(f"longest futex wait {longest * 1000:.1f} ms; over 10 ms: {sum(w[1] > 0.010 for w in waits)}, "
      f"over 50 ms: {sum(w[1] > 0.050 for w in waits)}")
