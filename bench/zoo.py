#!/usr/bin/python3
"""The zoo benchmark (`make bench-zoo`): ptqkit's CPU runtime against ONNX Runtime (onnxruntime-
node) on every model of the zoo, in the same run, alternating the two, medians of REPEAT pairs.

  bench/zoo.py BUILD_DIR [--seconds S] [--repeat R] [--models a,b] [--markdown FILE]
               [--perf-md docs/PERF.md] [--lanes N] [--rows-json FILE]

Per model: throughput ratio ptq / ORT at batch 1 and the model's natural batch, 1 and 2 threads;
ptq's first batch against a later one (packing and planning); whole-process peak RSS against
ORT's (natural batch, 2 threads); `ptq quantize` wall time on the 16 calibration samples (the
default method); the INT8 model's SQNR against FP32 on the 8 held-out samples (`ptq compare`).
With --perf-md the table replaces the one between the zoo-table markers of that file.
--lanes N (a machine with many cores) measures N models at a time, each pinned with taskset to its
own pair of cores, ptq and ORT alternating inside a lane as always; the lanes share the memory
bus and the last-level cache, so both sides of a ratio see the same neighbours. --rows-json
rewrites FILE after each model, so a run cut short keeps what it measured.
"""
import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perf_md  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEGIN, END = "<!-- zoo-table:begin -->", "<!-- zoo-table:end -->"


def field(text, key):
    m = re.search(rf"{key}[= ]([0-9.eE+-]+)", text)
    if not m:
        raise RuntimeError(f"no {key} in: {text.strip()}")
    return float(m.group(1))


LANE = threading.local()


def run(cmd):
    r = subprocess.run(getattr(LANE, "prefix", []) + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def sample_files(zoo, model, split):
    return [f"{name}={os.path.join(zoo, model['name'], split, name + '.npy')}"
            for name in model["inputs"]]


def ptq_point(build, zoo, model, batch, threads, secs):
    out = run([os.path.join(build, "bench", "runtime_bench"),
               os.path.join(zoo, model["name"] + ".onnx"),
               ",".join(sample_files(zoo, model, "test")), str(batch), str(threads), str(secs)])
    return {"rate": field(out, "images_per_s"), "first": field(out, "first_run_s"),
            "rss": field(out, "process_peak_bytes") / 2**20}


def ort_point(zoo, model, batch, threads, secs):
    out = run(["node", os.path.join(ROOT, "tests", "common", "ort_batches.js"), "--bench",
               os.path.join(zoo, model["name"] + ".onnx"), str(batch), str(threads), str(secs)]
              + sample_files(zoo, model, "test"))
    return {"rate": field(out, "samples_per_s"), "rss": field(out, "peak_rss_mib")}


def throughput(build, zoo, model, batch, threads, args):
    """Medians of REPEAT alternating pairs (ptq first, then ORT)."""
    ours, theirs = [], []
    for _ in range(args.repeat):
        ours.append(ptq_point(build, zoo, model, batch, threads, args.seconds))
        theirs.append(ort_point(zoo, model, batch, threads, args.seconds))
    med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
    later = batch / med(ours, "rate")
    return {"ratio": med(ours, "rate") / med(theirs, "rate"), "ptq_rate": med(ours, "rate"),
            "first_over_later": med(ours, "first") / later,
            "rss_ratio": med(ours, "rss") / med(theirs, "rss"), "ptq_rss": med(ours, "rss")}


def quantize(build, zoo, model):
    """`ptq quantize` wall time on the calibration split, and the INT8 SQNR on the test split."""
    ptq = os.path.join(build, "ptq")
    fp32 = os.path.join(zoo, model["name"] + ".onnx")
    with tempfile.TemporaryDirectory() as tmp:
        int8 = os.path.join(tmp, "int8.onnx")
        data = [a for f in sample_files(zoo, model, "calib") for a in ("--data", f)]
        start = time.monotonic()
        run([ptq, "quantize", fp32, "-o", int8, "--threads", "2", "-q"] + data)
        seconds = time.monotonic() - start
        test = [a for f in sample_files(zoo, model, "test") for a in ("--data", f)]
        report = json.loads(run([ptq, "compare", fp32, int8, "--json"] + test))
    sqnr = min(float(o["sqnr_db"]) for o in report["outputs"])
    return seconds, sqnr


def measure(build, zoo, model, args):
    row = {"name": model["name"], "family": model["family"], "cells": {}}
    for batch in (1, model["batch"]):
        for threads in (1, 2):
            row["cells"][(batch, threads)] = throughput(build, zoo, model, batch, threads, args)
    try:
        row["quantize_s"], row["sqnr_db"] = quantize(build, zoo, model)
    except RuntimeError as e:  # the speed cells still stand
        print(f"bench-zoo: {model['name']}: quantize: {e}", file=sys.stderr)
        row["quantize_s"] = row["sqnr_db"] = float("nan")
    return row


def lanes_note(args):
    if args.lanes <= 1:
        return ""
    return f"; {args.lanes} models at a time, each on its own pair of cores (`--lanes`)"


def markdown(rows, args, commit):
    cpu = platform.processor() or "x86-64"
    with open("/proc/cpuinfo") as f:
        names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    lines = [f"Generated by `bench/zoo.py` (`make bench-zoo`) at commit {commit} on "
             f"{names[0] if names else cpu}, {os.cpu_count()} CPUs; {args.repeat} alternating "
             f"pairs a point, {args.seconds} s each, medians{lanes_note(args)}. Throughput "
             "ratio ptq / ORT "
             "(> 1: ptq faster); b = batch (natural: 32 CNNs, 8 transformers), t = threads; "
             "first = ptq's first batch / a later one (natural batch, 1 thread); RSS = peak "
             "whole-process RSS ptq / ORT (natural batch, 2 threads); quantize = `ptq quantize` "
             "on 16 samples (2 threads); SQNR = INT8 vs FP32 on 8 held-out samples, worst output.",
             "",
             "| model | family | b1 t1 | b1 t2 | bN t1 | bN t2 | first | RSS | quantize s | "
             "SQNR dB |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    ratios = []
    for r in rows:
        cells = [r["cells"][k] for k in sorted(r["cells"], key=lambda k: (k[0] != 1, k[1]))]
        ratios += [c["ratio"] for c in cells]
        natural = r["cells"][max(r["cells"])]
        first = r["cells"][(max(r["cells"])[0], 1)]["first_over_later"]
        lines.append(f"| {r['name']} | {r['family']} | "
                     + " | ".join(f"{c['ratio']:.2f}" for c in cells)
                     + f" | {first:.2f} | {natural['rss_ratio']:.2f} | {r['quantize_s']:.1f} | "
                       f"{r['sqnr_db']:.1f} |")
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines += ["", f"Geometric mean of the throughput ratios: **{geo:.2f}**; lowest cell "
                      f"{min(ratios):.2f}; cells >= 1.0: {sum(x >= 1 for x in ratios)} of "
                      f"{len(ratios)}."]
    return "\n".join(lines) + "\n"


def save_rows(rows, path):
    plain = [dict(r, cells={f"b{b}t{t}": c for (b, t), c in r["cells"].items()}) for r in rows]
    with open(path + ".tmp", "w") as f:
        json.dump(plain, f, indent=1)
    os.replace(path + ".tmp", path)


def measure_all(zoo, models, args):
    """Measures every model, args.lanes at a time, each lane on its own pair of cores."""
    rows, lock, queue = [], threading.Lock(), list(models)

    def lane(index):
        if args.lanes > 1 and shutil.which("taskset"):
            LANE.prefix = ["taskset", "-c", f"{2 * index},{2 * index + 1}"]
        while True:
            with lock:
                if not queue:
                    return
                m = queue.pop(0)
            try:
                row = measure(args.build, zoo, m, args)
            except RuntimeError as e:
                print(f"bench-zoo: {m['name']}: {e}", file=sys.stderr)
                continue
            with lock:
                rows.append(row)
                print(f"bench-zoo: {m['name']} done", file=sys.stderr)
                if args.rows_json:
                    save_rows(rows, args.rows_json)

    threads = [threading.Thread(target=lane, args=(i,)) for i in range(args.lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--models", default="")
    p.add_argument("--markdown")
    p.add_argument("--perf-md")
    p.add_argument("--lanes", type=int, default=1)
    p.add_argument("--rows-json")
    args = p.parse_args()
    zoo = os.path.join(os.environ.get("PTQ_TEST_DATA", os.path.join(args.build, "testdata")), "zoo")
    with open(os.path.join(zoo, "manifest.json")) as f:
        models = json.load(f)["models"]
    if args.models:
        wanted = args.models.split(",")
        models = [m for m in models if m["name"] in wanted]
    rows = measure_all(zoo, models, args)
    rows.sort(key=lambda r: [m["name"] for m in models].index(r["name"]))
    commit = perf_md.commit()
    table = markdown(rows, args, commit)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
    if args.perf_md:
        perf_md.splice(args.perf_md, BEGIN, END, table)
    return 0 if len(rows) == len(models) else 1


if __name__ == "__main__":
    sys.exit(main())
