"""A results store (SQLite, written by bench, ablate and sweep) as pandas DataFrames.

The tables are read as stored; the metrics (friction phi per series, executor ratios with paired CIs,
ranking inversions, the A/A controls) are computed by the same C++ code as ``friction report``.
"""
from __future__ import annotations

import json
import os
import sqlite3
import weakref
from functools import cached_property
from typing import Any, Optional

from . import _core


def remove_store(db: str) -> None:
    """Removes a results store and the files SQLite keeps beside it (a read-only connection to a store in WAL
    mode leaves its -wal and -shm files behind)."""
    for path in (db, db + "-wal", db + "-shm", db + "-journal"):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _pandas():
    import pandas  # deferred: importing pandas takes longer than importing friction

    return pandas


class Results:
    """The results store at ``db``. DataFrames: ``measurements`` (one row per cell: model, backend, batch,
    passes, median_ms, ci_low_ms, ci_high_ms, unstable, ...), ``attributions`` (per pass and method, with
    its CI and whether the effect is measurable), ``rounds`` (the calibration and load of each round),
    ``series`` (latency and friction metrics per batch), ``executor_ratios``, ``mitigation`` (R(b) and
    delta-phi against the reference executor) and ``aa`` (the A/A controls).
    ``report`` is the whole data of ``friction report`` as a dict.

    A store that ``ablate`` or ``sweep`` made in a temporary file (no ``db`` given) belongs to this object:
    it is removed when the object is garbage collected or the interpreter exits; ``save`` keeps a copy."""

    def __init__(self, db: str, reference: str = "", min_effect: float = 0.02, *, temporary: bool = False):
        db = os.fspath(db)
        if not os.path.isfile(db):
            raise _core.Error(f"results store '{db}' does not exist")
        self.db = db
        self.reference = reference
        self.min_effect = min_effect
        self.temporary = temporary
        if temporary:
            self._remove = weakref.finalize(self, remove_store, db)

    def save(self, path: str) -> "Results":
        """Copies the store to ``path`` (SQLite's online backup) and returns the results of the copy, which
        stays when this object goes."""
        path = os.fspath(path)
        if os.path.exists(path):
            raise _core.Error(f"'{path}' exists: save does not overwrite a results store")
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as source, sqlite3.connect(path) as copy:
            source.backup(copy)
        return Results(path, self.reference, self.min_effect)

    def _table(self, sql: str):
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as con:
            return _pandas().read_sql_query(sql, con)

    @cached_property
    def measurements(self):
        df = self._table("SELECT * FROM measurements ORDER BY id")
        df = df.drop(columns=["samples_json"])
        df["unstable"] = df["unstable"].astype(bool)
        return df

    def samples(self, cell_key: str) -> list[float]:
        """The per-repetition times (ms) of one cell."""
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as con:
            row = con.execute("SELECT samples_json FROM measurements WHERE cell_key = ?", (cell_key,)).fetchone()
        if row is None:
            raise KeyError(cell_key)
        return json.loads(row[0])

    @cached_property
    def rounds(self):
        return self._table("SELECT * FROM rounds ORDER BY group_key, round")

    @cached_property
    def report(self) -> dict[str, Any]:
        return json.loads(_core.report_data(self.db, reference=self.reference, min_effect=self.min_effect))

    @cached_property
    def attributions(self):
        rows = []
        for a in self.report.get("attributions") or []:
            ci = a.get("ci_ms") or [None, None]
            rows.append({**{k: v for k, v in a.items() if k != "ci_ms"}, "ci_low_ms": ci[0], "ci_high_ms": ci[1]})
        return _pandas().DataFrame(rows, columns=["experiment", "model", "backend", "batch", "method", "pass",
                                                  "value_ms", "stderr_ms", "ci_low_ms", "ci_high_ms", "measurable"])

    @cached_property
    def series(self):
        """One row per (model, backend, config, batch): median and CI, throughput, per-sample cost,
        friction at that batch, and the series' friction slope phi."""
        rows = []
        for s in self.report.get("series") or []:
            metrics = {m["batch"]: m for m in s.get("metrics") or []}
            for p in s["points"]:
                m = metrics.get(p["batch"], {})
                rows.append({"model": s["model"], "backend": s["backend"], "config": s["config"], "batch": p["batch"],
                             "median_ms": p["median_ms"], "ci_low_ms": p["ci_ms"][0], "ci_high_ms": p["ci_ms"][1],
                             "unstable": p["unstable"], "throughput": m.get("throughput"),
                             "cost_ms": m.get("cost_ms"), "friction": m.get("friction"), "phi": s.get("phi")})
        return _pandas().DataFrame(rows)

    @cached_property
    def executor_ratios(self):
        """Each executor against the reference executor per model and batch: paired ratio, its CI, and
        whether it differs (the CI clears 1 by min_effect)."""
        rows = [{**{k: v for k, v in r.items() if k != "ci"}, "ci_low": r["ci"][0], "ci_high": r["ci"][1]}
                for r in self.report.get("executor_ratios") or []]
        return _pandas().DataFrame(rows)

    @cached_property
    def mitigation(self):
        """Compiler friction mitigation of each executor against the reference, per model and batch: S(b), R(b)
        (with conservative intervals) and the model's delta-phi (docs/metrics.md)."""
        rows = []
        for m in self.report.get("mitigation") or []:
            for p in m["points"]:
                rows.append({"executor": m["executor"], "reference": m["reference"], "model": m["model"],
                             "batch": p["batch"], "speedup": p["speedup"], "speedup_ci_low": p["speedup_ci"][0],
                             "speedup_ci_high": p["speedup_ci"][1], "R": p["mitigation"],
                             "R_ci_low": p["mitigation_ci"][0], "R_ci_high": p["mitigation_ci"][1],
                             "delta_phi": m.get("delta_phi")})
        return _pandas().DataFrame(rows)

    @cached_property
    def aa(self):
        """The A/A controls (one program measured twice): ratio, CI, and whether it reads as a difference."""
        rows = [{**{k: v for k, v in r.items() if k != "ci"}, "ci_low": r["ci"][0], "ci_high": r["ci"][1]}
                for r in (self.report.get("aa") or {}).get("controls") or []]
        return _pandas().DataFrame(rows)

    def __repr__(self) -> str:
        return f"<friction.Results '{self.db}': {self.report.get('measurements', 0)} measurements>"
