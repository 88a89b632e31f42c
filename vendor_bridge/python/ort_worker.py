#!/usr/bin/env python3
"""ONNX Runtime worker for friction's `ort` backend.

friction starts this process once per compiled model and talks to it over
stdin/stdout, one JSON object per line:
  {"cmd": "load", "model": PATH, "options": {...}}  -> {"ok": true, "version": ..., "load_ms": ...}
  {"cmd": "run", "dir": DIR, "inputs": N}            -> {"ok": true, "ms": ..., "outputs": K}
  {"cmd": "quit"}
Tensors travel as .npy files in DIR (input_<i>.npy, output_<i>.npy). The
reported "ms" is measured around InferenceSession.run only, so transport and
process start-up stay outside the timed region.

Options: level = disabled | basic | extended | layout | all (ORT's graph
optimization levels), disable = comma-separated optimizer names for ORT's
disabled_optimizers, threads = intra-op thread count (0: ORT's default).
"""
import json
import os
import sys
import time

LEVELS = {
    "disabled": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "layout": "ORT_ENABLE_LAYOUT",
    "all": "ORT_ENABLE_ALL",
}


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def load(req):
    import onnxruntime as ort

    opts = req.get("options", {})
    so = ort.SessionOptions()
    so.log_severity_level = 3  # errors only: warnings would interleave with friction's output
    level = opts.get("level", "all")
    if level not in LEVELS or not hasattr(ort.GraphOptimizationLevel, LEVELS[level]):
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got '{level}'")
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[level])
    threads = int(opts.get("threads", 0))
    if threads > 0:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
    disabled = [d for d in opts.get("disable", "").split(",") if d]
    t0 = time.perf_counter()
    kwargs = {"disabled_optimizers": disabled} if disabled else {}
    session = ort.InferenceSession(req["model"], sess_options=so, providers=["CPUExecutionProvider"], **kwargs)
    load_ms = (time.perf_counter() - t0) * 1e3
    return session, {"ok": True, "version": ort.__version__, "load_ms": load_ms}


def run(session, req):
    import numpy as np

    names = [i.name for i in session.get_inputs()]
    feeds = {names[i]: np.load(os.path.join(req["dir"], f"input_{i}.npy")) for i in range(int(req["inputs"]))}
    t0 = time.perf_counter()
    outs = session.run(None, feeds)
    ms = (time.perf_counter() - t0) * 1e3
    for i, o in enumerate(outs):
        np.save(os.path.join(req["dir"], f"output_{i}.npy"), np.ascontiguousarray(o))
    return {"ok": True, "ms": ms, "outputs": len(outs)}


def main():
    session = None
    for line in sys.stdin:
        try:
            req = json.loads(line)
            if req["cmd"] == "quit":
                return
            if req["cmd"] == "load":
                session, answer = load(req)
                reply(answer)
            elif req["cmd"] == "run":
                reply(run(session, req))
            else:
                reply({"ok": False, "error": f"unknown command {req['cmd']}"})
        except Exception as e:  # every failure goes back to friction as a message
            reply({"ok": False, "error": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()
