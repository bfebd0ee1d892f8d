#!/usr/bin/env python3
"""Runs a command and prints its wall time and peak RSS (the child's ru_maxrss) as JSON:
    measure.py -- CMD ARGS...   ->   {"seconds": 12.3, "peak_rss_mb": 456.7, "exit_code": 0}
Standard library only, so it runs under any Python."""
import json
import resource
import subprocess
import sys
import time


def main():
    args = sys.argv[1:]
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        sys.exit("usage: measure.py -- CMD ARGS...")
    start = time.perf_counter()
    code = subprocess.call(args)
    seconds = time.perf_counter() - start
    rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    print(json.dumps({"seconds": round(seconds, 3), "peak_rss_mb": round(rss_kb / 1024.0, 1),
                      "exit_code": code}))
    sys.exit(code)


if __name__ == "__main__":
    main()
