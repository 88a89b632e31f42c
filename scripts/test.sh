#!/usr/bin/env bash
# Set up, build, and run the whole test suite: unit and conformance tests,
# and the fuzz targets (built with clang-19, ASan/UBSan, in build-fuzz/, each
# run for FUZZ_SECONDS). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [[ ! -f build-fuzz/build.ninja ]]; then
  CC=clang-19 CXX=clang++-19 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRICTION_FUZZ=ON
fi
ninja -C build-fuzz -j "$(nproc)"
bash scripts/build.sh
cmake -S . -B build -DFRICTION_FUZZ_SECONDS="${FUZZ_SECONDS:-30}" > /dev/null
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
