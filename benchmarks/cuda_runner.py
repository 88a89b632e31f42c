"""friction-cuda-run as the GPU benchmarks call it: one plan with seeded weights, its --json line as a dict."""
import argparse
import json
import pathlib
import subprocess


def friction_run(runner, plan, reps, warmup=3):
    out = subprocess.run([runner, str(plan), "--fill-weights", "--reps", str(reps), "--warmup", str(warmup), "--json"],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"{plan}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def arguments(doc, folder):
    """The GPU benchmarks' command line: a folder of plans, the runner, rounds and runs a round."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument(folder, type=pathlib.Path)
    p.add_argument("--runner", required=True, help="friction-cuda-run")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=10, help="timed runs a round")
    return p.parse_args()
