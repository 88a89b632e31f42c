#!/usr/bin/env bash
# The main job: set up, build, then inspect and run a built-in zoo model on
# the reference interpreter. MODEL overrides the model (any MODEL spec).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
MODEL=${MODEL:-"zoo:resnet?depth=4&width=32&resolution=64"}
echo "== friction inspect $MODEL"
build/bin/friction inspect "$MODEL"
echo "== friction run $MODEL --batch 2"
build/bin/friction run "$MODEL" --batch 2
