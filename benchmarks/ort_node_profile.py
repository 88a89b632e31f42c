#!/usr/bin/env python3
"""ONNX Runtime's own per-node profile of a model, to set beside `friction bench --backend 'cpu?profile=on'`.

Runs MODEL through ORT (CPU provider, all graph optimizations unless --level says otherwise) with its
profiler on, and prints milliseconds per run by op type and for the slowest nodes. ORT names nodes after
its rewrites (an NCHWc conv with its activation fused is named after the activation's output), so
compare by layer name, not by op. Uses the project venv: `.venv/bin/python benchmarks/ort_node_profile.py
out/families/resnet18/model.onnx --batch 1`.
"""
import argparse
import collections
import json
import os
import sys
import tempfile

WARMUP = 3
LEVELS = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
          "all": "ORT_ENABLE_ALL"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=1, help="binds every symbolic input dim")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=30, help="measured runs, after 3 warm-up runs")
    ap.add_argument("--level", choices=sorted(LEVELS), default="all")
    ap.add_argument("--top", type=int, default=15, help="slowest nodes to list")
    args = ap.parse_args()
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        sys.exit(f"ort_node_profile: {e} (run it with the project venv: .venv/bin/python)")
    if not os.path.isfile(args.model):
        sys.exit(f"ort_node_profile: no such model file: {args.model}")

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[args.level])
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in session.get_inputs():
        if i.type != "tensor(float)":
            sys.exit(f"ort_node_profile: input '{i.name}' is {i.type}; only float inputs are generated")
        shape = [d if isinstance(d, int) else args.batch for d in i.shape]
        feeds[i.name] = rng.random(shape, dtype=np.float32)
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
        for _ in range(WARMUP + args.runs):
            session.run(None, feeds)
        with open(session.end_profiling()) as f:
            events = json.load(f)

    # The profiler cannot start after the warm-up, so the warm-up runs' nodes are dropped by time.
    model_runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                        if e.get("cat") == "Session" and e.get("name") == "model_run")[WARMUP:]

    def measured(e):
        return any(start <= e["ts"] <= end for start, end in model_runs)

    runs = len(model_runs)
    by_op, calls, by_node = collections.defaultdict(float), collections.Counter(), collections.defaultdict(float)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and measured(e):
            op = e["args"]["op_name"]
            by_op[op] += e["dur"]
            calls[op] += 1
            by_node[e["name"][: -len("_kernel_time")]] += e["dur"]
    if not runs:
        sys.exit("ort_node_profile: the profile has no model runs")
    total = sum(by_op.values()) / runs / 1000
    print(f"{args.model}  batch {args.batch}  threads {args.threads}  level {args.level}  "
          f"{runs} runs: {total:.3f} ms per run in nodes (the profiler's own cost included)")
    print("     ms/run   share  calls  op")
    for op, us in sorted(by_op.items(), key=lambda kv: -kv[1]):
        ms = us / runs / 1000
        print(f"  {ms:9.3f}  {100 * ms / total:5.1f}%  {calls[op] // runs:5d}  {op}")
    print("  slowest nodes:")
    for name, us in sorted(by_node.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {us / runs / 1000:9.3f}         {name}")


if __name__ == "__main__":
    main()
