#!/usr/bin/env bash
# End-to-end latency of friction's `cpu` backend against ONNX Runtime with all
# graph optimizations (issue 5's target: at most 2.0x), measured in the same run.
# friction runs its default pass pipeline; ORT gets the unoptimized model
# (--passes none) and applies its own optimizations (level all). Same threads.
# Each round measures cpu then ort per cell; the table keeps each side's lowest
# round median (on a shared machine other load only ever adds time).
# Usage: benchmarks/e2e_vs_ort.sh [FRICTION_BINARY]
#   env: MODELS (resnet50 mobilenetv2 vit_b), BATCHES (1 8), THREADS (2), REPS (20), ROUNDS (2)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
F=${1:-$ROOT/build/bin/friction}
PY=$ROOT/.venv/bin/python
MODELS=${MODELS:-resnet50 mobilenetv2 vit_b} BATCHES=${BATCHES:-1 8}
THREADS=${THREADS:-2} REPS=${REPS:-20} ROUNDS=${ROUNDS:-2}
declare -A SPEC=([resnet50]="zoo:resnet?preset=resnet50&resolution=224" [mobilenetv2]="zoo:mobilenetv2?preset=mobilenetv2"
                 [vit_b]="zoo:vit?preset=vit_b")

median() {  # MODEL BATCH BACKEND [friction flags...] -> median ms
  local model=$1 batch=$2 backend=$3
  shift 3
  OMP_NUM_THREADS=$THREADS "$F" bench "$model" --backend "$backend" --batch "$batch" --reps "$REPS" --warmup 2 \
    --threads "$THREADS" --max-seconds 20 --no-check --json "$@" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])'
}

printf '%-12s %5s %10s %10s %7s\n' model batch cpu_ms ort_ms ratio
for m in $MODELS; do
  for b in $BATCHES; do
    cpu=inf ort=inf
    for ((r = 0; r < ROUNDS; r++)); do
      c=$(median "${SPEC[$m]}" "$b" cpu)
      o=$(median "${SPEC[$m]}" "$b" "ort?threads=$THREADS&level=all" --passes none)
      cpu=$("$PY" -c "print(min(float('$cpu'), $c))")
      ort=$("$PY" -c "print(min(float('$ort'), $o))")
    done
    "$PY" -c "print('%-12s %5s %10.2f %10.2f %6.2fx' % ('$m', '$b', $cpu, $ort, $cpu / $ort))"
  done
done
