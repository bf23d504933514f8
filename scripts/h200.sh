#!/usr/bin/env bash
# The H200 calls of a validation session, each within the device tool's 10-minute limit
# (the GPU test suite outgrew one call on 2026-12-01: 198 tests in 570 s, 78% of it):
#   bash scripts/h200.sh tests-kernels   # sanitizer, device library, resident, argmax, special values, ... (~4 min)
#   bash scripts/h200.sh tests-runtime   # tests/test_runtime_cuda.py: launcher, graphs, every workload vs eager
#   bash scripts/h200.sh tests-train     # tests/test_train_cuda.py: new ops, compile_module trajectories
#   bash scripts/h200.sh bench           # the training-loop harness, every workload (set WORKLOADS=a,b to pick)
#   bash scripts/h200.sh bench-twins     # the harness's AdamW/CE/Adam twins with their SGD partners
#   bash scripts/h200.sh probe           # resident kernels alone (suite + unseen shapes) and the per-op cycle timer
# Each writes its log under $OUT (gpu_tests_<part>.log, train_loop*.log; the harness's JSON under $OUT/h200/).
# Copy what comes back under results/h200/ and regenerate the README table:
#   python -m benchmarks.report --json results/h200/train_loop.json --embed README.md
# On the device machine, install the carried wheels first (see ../shared/gpu-wheels.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-results/h200}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
gpu_tests() {  # $1: log name, rest: pytest arguments. -v: a cut log still names what ran.
  local name=$1
  shift
  timeout 570 python3 -m pytest -m cuda -v -p no:cacheprovider --durations=10 "$@" 2>&1 | tee "$out/gpu_tests_$name.log" | tail -40
}
case "${1:-}" in
  tests-kernels)
    gpu_tests kernels tests/ --ignore=tests/test_runtime_cuda.py --ignore=tests/test_train_cuda.py
    ;;
  tests-runtime)
    gpu_tests runtime tests/test_runtime_cuda.py
    ;;
  tests-train)
    gpu_tests train tests/test_train_cuda.py
    ;;
  bench)
    mkdir -p "$out/h200"
    timeout 570 python3 -m benchmarks.train_loop ${WORKLOADS:+--workloads "$WORKLOADS"} \
      --out "$out/h200/train_loop.json" 2>&1 | tee "$out/train_loop.log" | tail -40
    ;;
  bench-twins)
    mkdir -p "$out/h200"
    timeout 570 python3 -m benchmarks.train_loop --workloads "${WORKLOADS:-online,classification,mlp4}" --twins \
      --out "$out/h200/train_loop_twins.json" 2>&1 | tee "$out/train_loop_twins.log" | tail -40
    ;;
  probe)
    timeout 400 python3 -m benchmarks.resident_probe --auto 2>&1 | tee "$out/resident_probe.log" | tail -15
    timeout 150 python3 -m benchmarks.resident_probe --timer tiny online classification 2>&1 | tee "$out/resident_timer.log" | tail -6
    ;;
  *)
    echo "usage: bash scripts/h200.sh tests-kernels|tests-runtime|tests-train|bench|bench-twins|probe" >&2
    exit 2
    ;;
esac
