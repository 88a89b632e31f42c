"""friction: a graph compiler built to study graph compilation.

Load a model, see what the passes do to it, compile and run it, measure it, and read a study's results::

    import friction, numpy as np
    model = friction.load("zoo:resnet?depth=2")          # an .onnx or .fir path, ONNX bytes, or a zoo spec
    fast = friction.compile(model, backend="cpu", batch=1)
    (logits,) = fast.run(np.zeros((1, 3, 32, 32), np.float32))
    fast.bench(reps=20)["median_ms"]
    slow = friction.compile(model, backend="cpu", batch=1, passes=[])     # every pass off
    results = friction.ablate(model, batches=[1])         # per-pass attributions with intervals
    results.attributions                                  # a pandas DataFrame

Errors raise ``friction.Error`` with the message the CLI prints.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from typing import Any, Iterable, Optional, Sequence, Union

import numpy as np

from . import _core
from ._core import Error
from ._results import Results, remove_store as _remove_store

__all__ = ["Error", "Model", "Compiled", "Results", "load", "passes", "backends", "ops", "optimize", "compile", "ablate",
           "sweep", "binary"]
__version__ = _core.revision

#: The `friction` command-line tool of this build (ablate and sweep run it).
binary: str = _core.binary

Source = Union[str, "os.PathLike[str]", bytes, "Model"]


class Model:
    """A friction graph: loaded (``load``) or optimized (``optimize``). Immutable: passes make a copy."""

    def __init__(self, core: _core.Model, source: str):
        self._core = core
        self.source = source

    @property
    def name(self) -> str:
        return self._core.name

    @property
    def inputs(self) -> list[dict]:
        """Each input's name, numpy dtype name and shape (ints; a str for a symbolic dim such as the batch)."""
        return self._core.inputs

    @property
    def outputs(self) -> list[dict]:
        return self._core.outputs

    @property
    def passes_run(self) -> list[dict]:
        """The passes that made this model: name, ms, graph stats before and after, the pass's counters."""
        return self._core.records

    @property
    def batch_symbol(self) -> Optional[str]:
        """The symbolic batch dim (dim 0 of an input), or None when every input's dim 0 is fixed."""
        for i in self.inputs:
            if i["shape"] and isinstance(i["shape"][0], str):
                return i["shape"][0]
        return None

    def stats(self) -> dict:
        """Top-level nodes, kernels, fused regions, intermediate and parameter bytes."""
        return self._core.stats()

    def op_counts(self) -> dict[str, int]:
        return self._core.op_counts()

    def text(self, max_constant_bytes: int = 256) -> str:
        """The friction text IR (constants above max_constant_bytes elided; -1 prints all, parseable)."""
        return self._core.text(max_constant_bytes)

    def dot(self, title: str = "") -> str:
        """The graph as Graphviz DOT: fused regions as labelled clusters with the ONNX nodes they replaced,
        dedup instances coloured by pattern, layout transposes and channels-last regions marked."""
        return self._core.dot(title)

    def svg(self, path: Optional[Union[str, "os.PathLike[str]"]] = None, title: str = "") -> str:
        """The picture as SVG text (Graphviz's ``dot``), also written to ``path`` when given."""
        svg = self._core.svg(title)
        if path is not None:
            with open(path, "w") as f:
                f.write(svg)
        return svg

    def _repr_svg_(self) -> Optional[str]:
        # Notebooks draw a model shown as a cell's value; big graphs stay text (dot takes seconds on them).
        return self.svg() if self.stats()["nodes"] <= 400 else None

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the model as friction text IR (``.fir``) or ONNX (any other extension)."""
        self._core.save(os.fspath(path))

    def __repr__(self) -> str:
        s = self.stats()
        sig = ", ".join(f"{i['name']}: {i['dtype']}{i['shape']}" for i in self.inputs)
        return f"<friction.Model '{self.name}' ({sig}) {s['nodes']} nodes, {s['kernels']} kernels>"


def load(source: Source, name: str = "model.onnx") -> Model:
    """Loads an ONNX file, a friction ``.fir`` file, a zoo spec (``zoo:resnet?depth=4``) or ONNX bytes.

    ``name`` names in-memory bytes in error messages."""
    if isinstance(source, Model):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return Model(_core.load_bytes(bytes(source), name), name)
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"friction.load: expected a path, a zoo spec or ONNX bytes, got {type(source).__name__}")
    path = os.fspath(source)
    return Model(_core.load_path(path), path)


def passes() -> list[dict]:
    """The pass registry, in default pipeline order: name, summary, prerequisites."""
    return _core.passes()


def backends() -> list[str]:
    """The backends this build can run (interp, cpu, and the vendor bridges whose packages are installed)."""
    return _core.backends()


def ops() -> list[str]:
    """The ONNX ops friction supports (the op registry, ir/ops/)."""
    return _core.ops()


def _numpy_dtype(spec: dict) -> str:
    """The numpy dtype an input takes (bfloat16, which numpy lacks, is given as float32)."""
    return "float32" if spec["dtype"].startswith("bfloat16") else spec["dtype"]


def _names(x: Optional[Iterable[str]], what: str) -> Optional[list[str]]:
    if x is None:
        return None
    if isinstance(x, str):  # a comma-separated list, as on the command line
        return [p for p in x.split(",") if p]
    names = list(x)
    for p in names:
        if not isinstance(p, str):
            raise TypeError(f"{what}: pass names are strings, got {p!r}")
    return names


def _batch(batch: Optional[int]) -> Optional[int]:
    if batch is None:
        return None
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch <= 0:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    return int(batch)


def optimize(model: Source, *, batch: Optional[int] = None, disable: Iterable[str] = (),
             only: Optional[Iterable[str]] = None, passes: Optional[Iterable[str]] = None) -> Model:
    """Runs the pass pipeline on a copy of ``model``: the default pipeline, ``disable`` some passes, ``only``
    some (with their prerequisites), or exactly ``passes`` in order (``[]``: none). ``batch`` binds the
    symbolic batch dim first (None keeps it symbolic)."""
    m = load(model)
    core = _core.optimize(m._core, batch=_batch(batch), disable=_names(disable, "disable") or [],
                          only=_names(only, "only"), passes=_names(passes, "passes"))
    return Model(core, m.source)


class Compiled:
    """A model optimized and compiled for one backend. With ``batch=None`` and a symbolic batch dim, a
    program is compiled for each batch the inputs bring (the first run of a new batch compiles)."""

    def __init__(self, model: Model, backend: str, batch: Optional[int], pipeline: dict):
        self.model = model
        self.backend = backend
        self._pipeline = pipeline
        self._programs: dict[Optional[int], _core.Compiled] = {}
        self._last: Optional[_core.Compiled] = None
        self._specs = model.inputs  # read once: run() consults them on every call
        # A batch given (or none to bind) makes one program, which run() always uses.
        self._only: Optional[_core.Compiled] = None
        if batch is not None or model.batch_symbol is None:
            self._only = self._last = self._program(batch)

    def _program(self, batch: Optional[int]) -> _core.Compiled:
        p = self._programs.get(batch)
        if p is None:
            p = _core.Compiled(self.model._core, self.backend, batch, **self._pipeline)
            self._programs[batch] = p
        return p

    def _for_inputs(self, arrays: Sequence[np.ndarray]) -> _core.Compiled:
        """The program for these inputs: the one program, or the one of the batch they bring."""
        if self._only is not None:
            return self._only
        for spec, a in zip(self._specs, arrays):
            if spec["shape"] and spec["shape"][0] == self.model.batch_symbol and a.ndim > 0:
                if a.shape[0] <= 0:
                    raise Error(f"input '{spec['name']}' has batch {a.shape[0]}: the batch must be positive")
                return self._program(int(a.shape[0]))
        return self._program(1)

    @property
    def batch(self) -> Optional[int]:
        """The batch of the program that ran last (None before a run when the batch was left symbolic)."""
        if self._last is None:
            return None
        for b, p in self._programs.items():
            if p is self._last:
                return b
        return None

    @property
    def program(self) -> Model:
        """The optimized graph the last program runs."""
        return Model(self._require().model, self.model.source)

    @property
    def executor(self) -> str:
        return self._require().executor

    @property
    def interp_nodes(self) -> int:
        """Nodes the backend leaves to the reference interpreter (0 for cpu; -1 when a bridge does not say)."""
        return self._require().interp_nodes

    @property
    def profile(self) -> str:
        """Where the run time went per kind of step, over the runs so far (compile with ``profile=True``)."""
        return self._require().profile

    def _require(self) -> _core.Compiled:
        if self._last is None:
            raise Error("no program yet: the batch is symbolic; run once, or compile with batch=N")
        return self._last

    def run(self, *arrays: Any) -> list[np.ndarray]:
        """Runs the model on one array per input; returns one numpy array per output. numpy arrays must have
        the input's dtype; lists and scalars are converted to it. C-contiguous inputs are read in place (others
        are copied once); the outputs are the backend's own buffers, not copies."""
        specs = self._specs
        inputs = [a if isinstance(a, np.ndarray) and a.flags.c_contiguous else
                  np.ascontiguousarray(a) if isinstance(a, np.ndarray) else
                  np.asarray(a, dtype=_numpy_dtype(specs[i]) if i < len(specs) else None)
                  for i, a in enumerate(arrays)]
        program = self._for_inputs(inputs)
        outs = program.run(inputs)
        self._last = program
        return [np.asarray(o) for o in outs]

    __call__ = run

    def bench(self, *, reps: int = 20, warmup: int = 3, min_reps: int = 5, target_ci: float = 0.0,
              max_seconds: float = 60.0, threads: int = 0, check: bool = True, seed: int = 0,
              batch: Optional[int] = None) -> dict:
        """Measures latency under friction's protocol (seeded inputs, warm-up, repetitions, bootstrap CI),
        as ``friction bench --json``: median_ms, ci95_ms, samples_ms, p10_ms, p90_ms, unstable, threads,
        compile_ms, interp_nodes, and the error against the interpreter on the unoptimized model (``check``).
        ``threads=0``: the cores no other process holds. ``batch``: which program (default: the last run's,
        else 1)."""
        if batch is not None:
            if self._only is not None:
                raise Error(f"bench(batch={batch}): this program was compiled for one batch; compile with batch=None "
                            "(a model with a symbolic batch) to measure others")
            program = self._program(_batch(batch))
        elif self._last is not None:
            program = self._last
        else:
            program = self._program(1)
        r = program.bench(reps=reps, warmup=warmup, min_reps=min_reps, target_ci=target_ci,
                          max_seconds=max_seconds, threads=threads, check=check, seed=seed)
        self._last = program
        return json.loads(r)

    def __repr__(self) -> str:
        return f"<friction.Compiled '{self.model.name}' on {self.backend}, batch {self.batch}>"


def compile(model: Source, backend: str = "cpu", batch: Optional[int] = None, disable: Iterable[str] = (),
            only: Optional[Iterable[str]] = None, passes: Optional[Iterable[str]] = None,
            profile: bool = False) -> Compiled:
    """Optimizes ``model`` (the pass switches as in ``optimize``) and compiles it on ``backend`` (``cpu``,
    ``interp``, a vendor bridge such as ``ort``, or a spec with options: ``cpu?ukernels=off``).
    ``profile=True`` times each step (``Compiled.profile``)."""
    m = load(model)
    if profile:
        backend += ("&" if "?" in backend else "?") + "profile=on"
    pipeline = dict(disable=_names(disable, "disable") or [], only=_names(only, "only"),
                    passes=_names(passes, "passes"))
    return Compiled(m, backend, _batch(batch), pipeline)


def _model_arg(model: Source, keep: list) -> str:
    """A path the CLI can read: str paths and zoo specs as they are, other models saved to a temp .fir."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    m = load(model)
    tmp = tempfile.NamedTemporaryFile(suffix=".fir", delete=False)
    tmp.close()
    keep.append(tmp.name)
    m.save(tmp.name)
    return tmp.name


def _run_cli(args: list[str], what: str, remove_on_error: Optional[str] = None) -> None:
    """Runs the friction CLI; a failure raises Error with its message and removes ``remove_on_error`` (a
    temporary results store the caller would have returned)."""
    proc = subprocess.run([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        if remove_on_error:
            _remove_store(remove_on_error)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("friction: ")]
        raise Error(lines[-1][len("friction: "):] if lines else f"{what} failed: {proc.stderr.strip()[-500:]}")


def _default_db(prefix: str) -> str:
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".db")
    os.close(fd)
    os.unlink(path)
    return path


def ablate(model: Source, *, backend: str = "cpu", batches: Sequence[int] = (1,), mode: str = "loo",
           over: Optional[Iterable[str]] = None, db: Optional[str] = None, aa: bool = True, check: bool = True,
           threads: int = 0, rounds: Optional[int] = None, seed: int = 0, extra_args: Sequence[str] = ()) -> Results:
    """Attributes latency to passes (``mode``: ``loo`` leave-one-out, ``aoi`` add-one-in, ``shapley``) by
    running ``friction ablate`` (interleaved rounds, paired CIs, an A/A control unless ``aa=False``);
    returns its results store (``db``; unless given, a temporary file the returned Results removes when it
    goes: ``Results.save`` keeps a copy)."""
    keep: list[str] = []
    temporary = not db
    try:
        db = db or _default_db("friction-ablate-")
        args = ["ablate", _model_arg(model, keep), "--backend", backend, "--mode", mode, "--db", db,
                "--batches", ",".join(str(_batch(b)) for b in batches), "--seed", str(seed)]
        if over:
            args += ["--over", ",".join(_names(over, "over"))]
        if not aa:
            args.append("--no-aa")
        if not check:
            args.append("--no-check")
        if threads:
            args += ["--threads", str(threads)]
        if rounds:
            args += ["--rounds", str(rounds)]
        _run_cli(args + list(extra_args), "friction ablate", remove_on_error=db if temporary else None)
        return Results(db, temporary=temporary)
    finally:
        for f in keep:
            os.unlink(f)


def sweep(spec: Union[str, "os.PathLike[str]"], *, db: Optional[str] = None, resume: bool = False,
          shard: Optional[str] = None, extra_args: Sequence[str] = ()) -> Results:
    """Runs a sweep specification (TOML, docs/study.md) with ``friction sweep``; returns its results store
    (``db``; unless given, a temporary file the returned Results removes when it goes)."""
    temporary = not db
    db = db or _default_db("friction-sweep-")
    args = ["sweep", os.fspath(spec), "--db", db]
    if resume:
        args.append("--resume")
    if shard:
        args += ["--shard", shard]
    _run_cli(args + list(extra_args), "friction sweep", remove_on_error=db if temporary else None)
    return Results(db, temporary=temporary)
