#!/usr/bin/env bash
# The layout rules docs/codegen.md and the README state, checked on the tree:
#  - only codegen/mlir/ includes MLIR or LLVM headers;
#  - no source file outside tests/ is longer than 700 lines (one op family, one job, per file).
# Usage: check_layout.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 2
fails=0
sources=$(git ls-files 2>/dev/null | grep -E '\.(cpp|h|def)$' || find . -name '*.cpp' -o -name '*.h' -o -name '*.def' | sed 's|^\./||')
for f in $sources; do
  [[ -f $f ]] || continue
  if [[ $f != codegen/mlir/* ]] && grep -qE '#include [<"](mlir|llvm)/' "$f"; then
    echo "FAIL $f includes MLIR/LLVM headers: only codegen/mlir/ may"
    fails=$((fails + 1))
  fi
  lines=$(wc -l < "$f")
  if [[ $f != tests/* && $lines -gt 700 ]]; then
    echo "FAIL $f has $lines lines (at most 700 outside tests/)"
    fails=$((fails + 1))
  fi
done
echo "layout: $(wc -w <<< "$sources") files checked, $fails problems"
exit $((fails > 0))
