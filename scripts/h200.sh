#!/usr/bin/env bash
# The two H200 calls of a validation session (each fits the device tool's 10-minute limit):
#   bash scripts/h200.sh tests   # GPU test suite (tests marked cuda), log -> $OUT/gpu_tests.log   (~7.5 min)
#   bash scripts/h200.sh bench   # the training-loop harness -> $OUT/h200/{train_loop.json,README.md,...} (~8.5 min)
# Copy what comes back under results/h200/ and regenerate the README table:
#   python -m benchmarks.report --json results/h200/train_loop.json --embed README.md
# On the device machine, install the carried wheels first (see ../shared/gpu-wheels.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-results/h200}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
case "${1:-}" in
  tests)
    timeout 570 python3 -m pytest -m cuda tests/ -q -p no:cacheprovider --durations=10 2>&1 | tee "$out/gpu_tests.log"
    ;;
  bench)
    mkdir -p "$out/h200"
    timeout 570 python3 -m benchmarks.train_loop --out "$out/h200/train_loop.json" 2>&1 | tee "$out/train_loop.log"
    ;;
  *)
    echo "usage: bash scripts/h200.sh tests|bench" >&2
    exit 2
    ;;
esac
