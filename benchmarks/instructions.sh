#!/usr/bin/env bash
# Instructions per inference of friction's `cpu` backend on small models,
# counted by valgrind's callgrind: a number this machine's load does not move,
# so a kernel regression shows up even when wall-clock ratios are noise. One
# thread (OpenMP off the count), batch 1, inclusive instructions of
# CpuModel::run divided by the runs; compile time is not counted. With
# BASELINE set, the same for another friction binary and the ratio.
# Usage: benchmarks/instructions.sh [FRICTION_BINARY]
#   env: MODELS (the torch fixtures in tests/models/torch), CONFIG (default | all-off), BASELINE
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
F=${1:-$ROOT/build/bin/friction}
MODELS=${MODELS:-$(ls -d "$ROOT"/tests/models/torch/*/ | xargs -n1 basename)}
CONFIG=${CONFIG:-default} BASELINE=${BASELINE:-}
RUNS=4  # 1 warm-up + 3 measured
case $CONFIG in
  default) FLAGS=() ;;
  all-off) FLAGS=(--passes none) ;;
  *) echo "instructions.sh: CONFIG must be default or all-off, not '$CONFIG'" >&2; exit 2 ;;
esac
command -v valgrind > /dev/null || { echo "instructions.sh: needs valgrind (scripts/setup.sh installs it)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() {  # BINARY MODEL -> instructions per run
  local out=$tmp/cg.out model=$2
  [[ -f $model || $model == zoo:* ]] || model=$ROOT/tests/models/torch/$model/model.onnx
  valgrind --tool=callgrind --callgrind-out-file="$out" "$1" bench "$model" --backend cpu --batch 1 --warmup 1 \
    --reps 3 --min-reps 3 --max-seconds 1000000 --no-check --threads 1 "${FLAGS[@]}" > /dev/null 2> "$tmp/log" ||
    { cat "$tmp/log" >&2; exit 1; }
  # awk reads to the end: leaving early would fail the pipeline (pipefail) with SIGPIPE.
  callgrind_annotate --inclusive=yes "$out" 2> /dev/null | awk -v runs=$RUNS '!done && /CpuModel::run\(/ {
      gsub(",", "", $1); printf "%.0f\n", $1 / runs; done = 1 }'
}

printf '%-22s %-8s %16s%s\n' model config instr/run "${BASELINE:+       baseline    ratio}"
for m in $MODELS; do
  n=$(count "$F" "$m")
  if [[ -n $BASELINE ]]; then
    b=$(count "$BASELINE" "$m")
    printf '%-22s %-8s %16s %16s %8.4f\n' "$m" "$CONFIG" "$n" "$b" "$(awk -v n="$n" -v b="$b" 'BEGIN { print n / b }')"
  else
    printf '%-22s %-8s %16s\n' "$m" "$CONFIG" "$n"
  fi
done
