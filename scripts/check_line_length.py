#!/usr/bin/python3
"""Lines of the C++ and GLSL sources longer than .clang-format's column limit (in characters,
not bytes: `×` is one column).

  scripts/check_line_length.py [--fix]

Lists every such line as FILE:LINE: N columns and exits 1 when there is one. --fix hands those
lines, and only those, to clang-format (`--lines`), which rewraps code and comments; what it
cannot shorten (a long string or URL) is still listed. The files are the tracked ones
(`git ls-files`); a tree without git is checked by walking it.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUFFIXES = (".cpp", ".h", ".inc", ".comp", ".glsl")


def column_limit():
    with open(os.path.join(ROOT, ".clang-format"), encoding="utf-8") as f:
        return int(re.search(r"ColumnLimit:\s*(\d+)", f.read()).group(1))


def sources():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True,
                             check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(ROOT)
               for f in fs if not d.startswith(os.path.join(ROOT, "build"))]
    return sorted(f for f in out if f.endswith(SUFFIXES) and not f.startswith("third_party/"))


def long_lines(path, limit):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return [(i, len(line.rstrip("\n"))) for i, line in enumerate(f, 1)
                if len(line.rstrip("\n")) > limit]


def fix(path, lines):
    if path.endswith((".comp", ".glsl")):
        return  # clang-format does not know GLSL's layout qualifiers; wrap these by hand
    ranges = [f"--lines={i}:{i}" for i, _ in lines]
    subprocess.run(["clang-format", "-i", "--style=file"] + ranges + [os.path.join(ROOT, path)],
                   check=True)


def main():
    limit = column_limit()
    found = 0
    for path in sources():
        lines = long_lines(path, limit)
        if lines and "--fix" in sys.argv[1:]:
            fix(path, lines)
            lines = long_lines(path, limit)
        for i, n in lines:
            print(f"{path}:{i}: {n} columns (limit {limit})")
        found += len(lines)
    if found:
        print(f"{found} lines exceed {limit} columns", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
