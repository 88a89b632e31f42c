"""The shared half of friction's Python-worker bridges (vendor_bridge/PythonBridge.cpp).

friction starts one worker process per compiled model and talks to it over stdin/stdout,
one JSON object per line:
  {"cmd": "load", "model": PATH, "options": {...}, "artifact": STEM (optional)}
      -> {"ok": true, "vendor": ..., "version": ..., "load_ms": ..., "threads_used": ... (when the vendor reports it),
          "artifact_reused": ... (when it saves artifacts)}
  {"cmd": "run", "dir": DIR, "inputs": N}            -> {"ok": true, "ms": ..., "outputs": K}
  {"cmd": "time", "dir": DIR, "inputs": N, "repeat": R} -> {"ok": true, "ms": [R times]}  (no outputs)
  {"cmd": "quit"}
Tensors travel as .npy files in DIR (input_<i>.npy, output_<i>.npy). A worker script only
implements `load(model_path, options) -> Executable` and calls `serve(load)`. The reported
"ms" is measured around Executable.execute alone, so file transport, host/device copies done
in prepare/fetch, and process start-up stay outside the timed region (a worker that times
the vendor itself, e.g. with CUDA events, sets Executable.last_ms in execute and that time is
reported instead); "load_ms" is the vendor's own import + compile time. A vendor whose compiled model
can be saved (`saves_artifacts`: IREE's vmfb, TVM's library) saves it at STEM plus its suffix, and loads
it from there when it exists: friction asks for the same STEM when it prepares a model anew (a layout
epoch, docs/metrics.md), which then costs a new process but no second compile. The harness's timed
repetitions use "time": the worker runs the model R times back to back on inputs prepared once,
so no transport falls between timed runs (a gap of a few ms between runs slowed ONNX Runtime's
ResNet-50 by 1-4%: its threads park and its caches cool).
"""
import json
import os
import sys
import time


class Executable:
    """A model compiled by a vendor. `vendor`/`version` name what executes it; `compile_ms`,
    when the worker sets it, is the vendor's compile time without the imports."""

    vendor = "?"
    version = "?"
    compile_ms = None
    # True on a class whose constructor takes `artifact` (a path stem, or None) and saves its compiled model
    # there, or loads it when it is there (then `artifact_reused`).
    saves_artifacts = False
    artifact_reused = False
    # The thread setting as the vendor reports it after compiling (ORT: the session's option, 0 for its
    # default; OpenVINO and TVM: the count they run with; IREE: the flag it was given): stored with every
    # measurement in the executor's description.
    threads_used = None
    # Set by execute() when the vendor times itself (GPU bridges: CUDA events around the
    # launch); it then replaces the host clock for that run.
    last_ms = None

    def prepare(self, inputs):
        """Untimed: the numpy inputs in the form execute() takes (e.g. device arrays)."""
        return inputs

    def execute(self, prepared):
        """Timed: runs the model once and returns its outputs when they are complete."""
        raise NotImplementedError

    def fetch(self, results):
        """Untimed: the outputs as numpy arrays."""
        import numpy as np

        return [np.asarray(r) for r in results]


def vendor_import(backend, module):
    """Imports a vendor's Python module; a missing or broken install is a clear error."""
    import importlib

    try:
        return importlib.import_module(module)
    except Exception as e:  # ImportError, or a wheel that does not load on this machine
        raise RuntimeError(f"{backend} is not installed in .venv: {type(e).__name__}: {e} "
                           "(scripts/setup.sh installs vendor_bridge/python/requirements-vendors.txt)") from None


def int_option(opts, key, default=0):
    try:
        return int(opts.get(key, default))
    except ValueError:
        raise ValueError(f"option {key} must be an integer, got '{opts[key]}'") from None


def choice_option(opts, key, choices, default):
    value = opts.get(key, default)
    if value not in choices:
        raise ValueError(f"option {key} must be one of {', '.join(choices)}, got '{value}'")
    return value


def list_option(opts, key):
    return [s for s in opts.get(key, "").split(",") if s]


def save_artifact(path, write):
    """write(tmp) saves a compiled model; it lands at `path` whole or not at all (a reader never sees half
    a file). A vendor that cannot save (e.g. no C compiler for TVM's library) compiles again next time."""
    tmp = f"{path}.{os.getpid()}.tmp{os.path.splitext(path)[1]}"
    try:
        write(tmp)
        os.replace(tmp, path)
    except Exception as e:  # the measurement does not depend on it
        print(f"friction worker: could not save the compiled model to {path}: {e}", file=sys.stderr)
        if os.path.exists(tmp):
            os.remove(tmp)


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _prepared_inputs(exe, req):
    import numpy as np

    inputs = [np.load(os.path.join(req["dir"], f"input_{i}.npy")) for i in range(int(req["inputs"]))]
    return exe.prepare(inputs)


def _timed_execute(exe, prepared):
    """(results, ms) of one execute(): the host clock, or the vendor's own timing when it set last_ms."""
    exe.last_ms = None
    t0 = time.perf_counter()
    results = exe.execute(prepared)
    ms = (time.perf_counter() - t0) * 1e3
    return results, (ms if exe.last_ms is None else exe.last_ms)


def _time(exe, req):
    """Runs `repeat` times back to back on inputs prepared once, as the vendors' benchmark tools do:
    nothing but the loop falls between two timed runs."""
    prepared = _prepared_inputs(exe, req)
    repeat = int(req["repeat"])
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    return {"ok": True, "ms": [_timed_execute(exe, prepared)[1] for _ in range(repeat)]}


def _run(exe, req):
    import numpy as np

    results, ms = _timed_execute(exe, _prepared_inputs(exe, req))
    outs = exe.fetch(results)
    for i, o in enumerate(outs):
        np.save(os.path.join(req["dir"], f"output_{i}.npy"), np.ascontiguousarray(o))
    return {"ok": True, "ms": ms, "outputs": len(outs)}


def serve(load):
    """The JSON-lines loop: `load(model_path, options)` returns an Executable."""
    # Vendors that print to stdout would corrupt the protocol: their output goes to stderr.
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = protocol
    exe = None
    for line in sys.stdin:
        try:
            req = json.loads(line)
            if req["cmd"] == "quit":
                return
            if req["cmd"] == "load":
                t0 = time.perf_counter()
                if getattr(load, "saves_artifacts", False):
                    exe = load(req["model"], req.get("options", {}), req.get("artifact"))
                else:
                    exe = load(req["model"], req.get("options", {}))
                # The vendor's compile time when the worker measured it (imports excluded), else all of load.
                load_ms = getattr(exe, "compile_ms", None) or (time.perf_counter() - t0) * 1e3
                answer = {"ok": True, "vendor": exe.vendor, "version": exe.version, "load_ms": load_ms}
                if exe.threads_used is not None:
                    answer["threads_used"] = str(exe.threads_used)
                if exe.saves_artifacts:
                    answer["artifact_reused"] = exe.artifact_reused
                reply(answer)
            elif req["cmd"] in ("run", "time"):
                if exe is None:
                    raise RuntimeError(f"{req['cmd']} before load")
                reply((_run if req["cmd"] == "run" else _time)(exe, req))
            else:
                reply({"ok": False, "error": f"unknown command {req['cmd']}"})
        except Exception as e:  # every failure goes back to friction as a message
            reply({"ok": False, "error": f"{type(e).__name__}: {e}"})
