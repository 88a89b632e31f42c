#!/usr/bin/env bash
# Half-precision models on friction's `cpu` backend (default passes, widen-half first): the families (MODELS)
# converted to f16 by onnxruntime's converter (onnxruntime.transformers.float16, inputs and outputs f16 too),
# each timed against the same model in f32 on friction and against the f16 model on ONNX Runtime (all graph
# optimizations), in interleaved rounds: each round runs the three as processes of their own (the median of
# REPS runs each) in a fresh random order. The table gives the medians of the per-round ratios with the
# distribution-free 95% interval of benchmarks/report/paired_ratio.py, and each f16 model's largest error
# against friction's interpreter on that model (which computes each op in f32 and rounds its result).
# Usage: benchmarks/half_vs_f32.sh [FRICTION_BINARY]
#   env: MODELS (resnet18 mobilenet_v2 efficientnet_b0 vit_b_16: family names), BATCH (1), THREADS (2),
#        ROUNDS (6), REPS (10), FAMILY_DIR (out/families: the f32 exports, made here when missing),
#        HALF_DIR (out/half: the f16 conversions)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
F=${1:-$ROOT/build/bin/friction}
PY=$ROOT/.venv/bin/python
MODELS=${MODELS:-resnet18 mobilenet_v2 efficientnet_b0 vit_b_16} BATCH=${BATCH:-1} THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-6} REPS=${REPS:-10}
FAMILY_DIR=${FAMILY_DIR:-$ROOT/out/families} HALF_DIR=${HALF_DIR:-$ROOT/out/half}

for m in $MODELS; do
  if [[ ! -f $FAMILY_DIR/$m/model.onnx ]]; then
    bash "$ROOT/scripts/setup_torch.sh"
    "$ROOT/.venv-torch/bin/python" "$ROOT/scripts/make_torch_fixtures.py" --full --batches 1 --out "$FAMILY_DIR" "$m" >&2
  fi
  if [[ ! -f $HALF_DIR/$m/model.onnx ]]; then
    mkdir -p "$HALF_DIR/$m"
    "$PY" -c 'import logging, sys, onnx
from onnxruntime.transformers.float16 import convert_float_to_float16
logging.disable(logging.WARNING)
onnx.save(convert_float_to_float16(onnx.load(sys.argv[1]), keep_io_types=False), sys.argv[2])' \
      "$FAMILY_DIR/$m/model.onnx" "$HALF_DIR/$m/model.onnx"
  fi
done

samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
median() {  # MODEL BACKEND -> median ms of one process's runs
  OMP_NUM_THREADS=$THREADS "$F" bench "$1" --backend "$2" --batch "$BATCH" --reps "$REPS" --warmup 2 \
    --threads "$THREADS" --max-seconds 20 --no-check --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])'
}
for m in $MODELS; do  # the f16 model's error against the interpreter, once, outside the timed rounds
  OMP_NUM_THREADS=$THREADS "$F" bench "$HALF_DIR/$m/model.onnx" --backend cpu --batch "$BATCH" --reps 1 --warmup 0 \
    --threads "$THREADS" --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], "error", d.get("max_abs_error"), d.get("max_rel_error"), sep="\t")' "$m" >> "$samples"
done
for ((r = 0; r < ROUNDS; r++)); do
  for m in $MODELS; do
    for e in $(shuf -e f32 f16 ort-f16); do
      case $e in
        f32) ms=$(median "$FAMILY_DIR/$m/model.onnx" cpu) ;;
        f16) ms=$(median "$HALF_DIR/$m/model.onnx" cpu) ;;
        ort-f16) ms=$(median "$HALF_DIR/$m/model.onnx" "ort?threads=$THREADS&level=all") ;;
      esac
      printf '%s\t%s\t%s\t%s\n' "$m" round "$r $e" "$ms" >> "$samples"
    done
  done
  echo "round $((r + 1))/$ROUNDS done" >&2
done
"$PY" - "$samples" "$ROOT/benchmarks/report" <<'EOF'
import collections, statistics, sys
sys.path.insert(0, sys.argv[2])
from paired_ratio import median_ci
ms, error = collections.defaultdict(dict), {}
for line in open(sys.argv[1]):
    model, kind, what, value = line.rstrip("\n").split("\t")
    if kind == "error":
        error[model] = (what, value)
    else:
        r, executor = what.split()
        ms[model].setdefault(int(r), {})[executor] = float(value)
def cell(ratios):
    ci = median_ci(ratios)
    interval = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "(needs 6 rounds)"
    return f"{statistics.median(ratios):.3f} {interval}, rounds {min(ratios):.3f}-{max(ratios):.3f}"
print("| model | f16 / f32 on friction cpu | friction f16 / ONNX Runtime f16 | f16 max abs / rel error vs interp |")
print("|---|---|---|---|")
for model, rounds in ms.items():
    f32 = [x["f16"] / x["f32"] for x in rounds.values()]
    ort = [x["f16"] / x["ort-f16"] for x in rounds.values()]
    print(f"| {model} | {cell(f32)} | {cell(ort)} | {' / '.join(error.get(model, ('?', '?')))} |")
EOF
