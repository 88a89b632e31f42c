"""Helpers for scripts that read `friction report`'s data (report.json): run the report on a store, and pick
executor ratios and inversion sets out of it. The numbers are the report's, computed in C++."""
import json
import os
import subprocess
import tempfile


def report(friction, db, reference):
    """report.json of `friction report --db DB --reference REFERENCE`, as a dict."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([friction, "report", "--db", db, "-o", os.path.join(d, "r.html"), "--reference", reference],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "r.json")) as f:
            return json.load(f)


def quantile(xs, q):
    """Type-7 quantile (numpy's default), as docs/metrics.md defines it."""
    xs = sorted(xs)
    h = (len(xs) - 1) * q
    lo = int(h)
    return xs[lo] if lo + 1 >= len(xs) else xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])


def ratios(data, executor):
    """The executor's per-cell ratios to the reference, by (model, batch)."""
    return {(r["model"], r["batch"]): r for r in data["executor_ratios"] if r["executor"] == executor}


def inversion_set(data, executor):
    """The executor's significant ranking inversions against the reference, as (batch, depth, a, b) tuples."""
    return {(r["batch"], r["depth"], i["a"], i["b"]) for r in data["executor_rankings"] if r["executor"] == executor
            for i in r["inversions"]}
