#!/usr/bin/env bash
# The halide backend against the cpu backend, same run: per model and batch,
# `friction bench --backend cpu --compare 'halide?schedule=S|default' ...`
# measures every executor in interleaved rounds (a fresh random order each
# round) and reports each one's median of per-round ratios to cpu with its
# 95% interval; the compile time of each executor (Halide: every kernel
# scheduled and JIT-compiled) and the kernels an autoscheduler refused (they
# run friction's schedule, so such a ratio is partly that schedule's) come
# from its description. Default pipeline for all; CONFIG=all-off runs them
# with no pass.
# Usage: benchmarks/halide_vs_cpu.sh [FRICTION_BINARY]
#   env: MODELS (resnet50 mobilenetv2 vit_b, or zoo specs / model paths), BATCHES (1 8),
#        SCHEDULES (default mullapudi2016 li2018 adams2019), ROUNDS (6), THREADS (2), CONFIG (default | all-off)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
F=${1:-$ROOT/build/bin/friction}
MODELS=${MODELS:-resnet50 mobilenetv2 vit_b} BATCHES=${BATCHES:-1 8}
SCHEDULES=${SCHEDULES:-default mullapudi2016 li2018 adams2019}
ROUNDS=${ROUNDS:-6} THREADS=${THREADS:-2} CONFIG=${CONFIG:-default}
declare -A SPEC=([resnet50]="zoo:resnet?preset=resnet50&resolution=224" [mobilenetv2]="zoo:mobilenetv2?preset=mobilenetv2"
                 [vit_b]="zoo:vit?preset=vit_b")
flags=()
[[ $CONFIG == all-off ]] && flags=(--passes none)
compare=()
for s in $SCHEDULES; do compare+=(--compare "halide?schedule=$s|$CONFIG"); done
printf '%-14s %5s %-34s %10s %8s %20s %12s %8s\n' model batch executor median_ms ratio "95% CI" compile_ms refused
for m in $MODELS; do
  for b in $BATCHES; do
    OMP_NUM_THREADS=$THREADS "$F" bench "${SPEC[$m]:-$m}" --backend cpu "${flags[@]}" "${compare[@]}" --batch "$b" \
      --threads "$THREADS" --rounds "$ROUNDS" --min-rounds "$ROUNDS" --no-check --json |
      M=$m B=$b "$ROOT/.venv/bin/python" -c '
import json, os, re, sys
d = json.load(sys.stdin)
model, batch = os.environ["M"], os.environ["B"]
for e in d["executors"]:
    c = re.search(r"compile (\d+) ms", e["executor_description"])
    refused = re.search(r"(\d+) kernels refused", e["executor_description"])
    ci = "[%.2f, %.2f]" % tuple(e["ratio_ci"])
    print("%-14s %5s %-34s %10.2f %8.2f %20s %12s %8s" % (model, batch, e["executor"], e["median_ms"], e["ratio_to_first"],
                                                          ci, c.group(1) if c else "?", refused.group(1) if refused else 0))
'
  done
done
