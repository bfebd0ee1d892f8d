"""Replaces a generated table in docs/PERF.md: the text between a pair of markers; and the
commit a generated table names."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commit():
    """This checkout's short commit hash ("" outside git)."""
    return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()


def splice(path, begin, end, table):
    """Writes `table` between the `begin` and `end` marker lines of the file at `path`."""
    with open(path) as f:
        text = f.read()
    if begin not in text or end not in text:
        raise RuntimeError(f"{path} has no {begin} ... {end} markers")
    head, rest = text.split(begin, 1)
    with open(path + ".tmp", "w") as f:
        f.write(head + begin + "\n" + table + end + rest.split(end, 1)[1])
    os.replace(path + ".tmp", path)
