"""The figures the scripts beside this one read from `wrk --latency` output.

    python3 benches/wrk/wrk_figures.py <wrk output file>

prints "requests/s requests p99-ms worst-ms" on one line.
"""
import re
import sys

MS_PER = {"us": 0.001, "ms": 1, "s": 1000}


def figures(text):
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    requests = int(re.search(r"(\d+) requests in", text).group(1))
    value, unit = re.search(r"\s99%\s+([\d.]+)(us|ms|s)", text).groups()
    p99 = float(value) * MS_PER[unit]
    value, unit = re.search(r"Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)", text).groups()
    worst = float(value) * MS_PER[unit]
    return rate, requests, p99, worst


if __name__ == "__main__":
    rate, requests, p99, worst = figures(open(sys.argv[1]).read())
    print(f"{rate:.2f} {requests} {p99:.3f} {worst:.3f}")
