#!/usr/bin/python3
"""Generates ONNX's own backend test data (node tests) with Debian's python3-onnx.

Usage: gen_backend_data.py OUTDIR

Writes OUTDIR/node/test_*/{model.onnx,test_data_set_0/input_*.pb,output_*.pb}, plus the
"simple" model cases under OUTDIR/simple/. It is `backend-test-tools generate-data -o OUTDIR`
with two fixes:
  * onnx 1.12's test cases use np.float, np.int, np.bool, np.object, ... which numpy 1.24
    removed; they are restored as the builtin types they used to alias.
  * one test module or case that fails does not abort the others: failures are listed on
    stderr, and the exit status is non-zero only if fewer than MIN_NODE_CASES node cases were
    written (onnx 1.12 yields 922: 924 definitions, two names defined twice).
The data is built in OUTDIR.tmp and renamed over OUTDIR, so a crash never leaves half a tree.
"""
import importlib
import os
import pkgutil
import shutil
import sys

import numpy as np

# Removed in numpy 1.24; onnx 1.12's test cases still use them as dtypes.
for _name, _alias in (("float", float), ("int", int), ("bool", bool), ("object", object),
                      ("str", str), ("complex", complex), ("long", int), ("unicode", str)):
    if _name not in np.__dict__:
        setattr(np, _name, _alias)

import onnx.backend.test.case.model as model_test  # noqa: E402
import onnx.backend.test.case.node as node_test  # noqa: E402
from onnx import numpy_helper  # noqa: E402

MIN_NODE_CASES = 800
failures = []


def tolerant_import_recursive(package):
    """onnx's import_recursive, but a module that fails to import is recorded and skipped."""
    for _loader, name, ispkg in pkgutil.iter_modules(package.__path__):
        module_name = f"{package.__name__}.{name}"
        try:
            module = importlib.import_module(module_name)
        except Exception as e:  # the test case's own code is at fault; keep the others
            failures.append((module_name, f"{type(e).__name__}: {e}"))
            continue
        if ispkg:
            tolerant_import_recursive(module)


def serialize(value, value_info):
    """Serialises one input or output as cmd_tools.generate_data does, by its declared type."""
    kind = value_info.type.WhichOneof("value")
    if kind == "map_type":
        return numpy_helper.from_dict(value, value_info.name).SerializeToString()
    if kind == "sequence_type":
        return numpy_helper.from_list(value, value_info.name).SerializeToString()
    if kind == "optional_type":
        return numpy_helper.from_optional(value, value_info.name).SerializeToString()
    return numpy_helper.from_array(value, value_info.name).SerializeToString()


def write_case(outdir, case):
    """Writes OUTDIR/<kind>/<name>/model.onnx and test_data_set_<i>/{input,output}_<j>.pb."""
    case_dir = os.path.join(outdir, case.kind, case.name)
    # onnx 1.12 defines two names twice (test_resize_tf_crop_and_resize,
    # test_reduce_sum_negative_axes_keepdims_random); like cmd_tools, the last definition wins.
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        set_dir = os.path.join(case_dir, f"test_data_set_{i}")
        os.makedirs(set_dir)
        for prefix, values, infos in (("input", inputs, graph.input),
                                      ("output", outputs, graph.output)):
            for j, value in enumerate(values):
                with open(os.path.join(set_dir, f"{prefix}_{j}.pb"), "wb") as f:
                    f.write(serialize(value, infos[j]))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_backend_data.py OUTDIR")
    outdir = os.path.abspath(sys.argv[1])
    tmp = outdir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)

    node_test.import_recursive = tolerant_import_recursive
    cases = [c for c in model_test.collect_testcases() if c.kind != "real"]  # "real" = downloads
    cases += node_test.collect_testcases(None)

    written = {}  # kind -> set of case names
    for case in cases:
        try:
            write_case(tmp, case)
            written.setdefault(case.kind, set()).add(case.name)
        except Exception as e:
            failures.append((f"{case.kind}/{case.name}", f"{type(e).__name__}: {e}"))
            shutil.rmtree(os.path.join(tmp, case.kind, case.name), ignore_errors=True)
            written.get(case.kind, set()).discard(case.name)

    for what, why in failures:
        print(f"gen_backend_data: skipped {what}: {why}", file=sys.stderr)
    summary = ", ".join(f"{len(names)} {kind}" for kind, names in sorted(written.items()))
    print(f"gen_backend_data: wrote {summary} cases to {outdir}; {len(failures)} failed")
    node_cases = len(written.get("node", ()))
    if node_cases < MIN_NODE_CASES:
        sys.exit(f"gen_backend_data: only {node_cases} node cases, expected at least "
                 f"{MIN_NODE_CASES}")

    shutil.rmtree(outdir, ignore_errors=True)
    os.replace(tmp, outdir)


if __name__ == "__main__":
    main()
