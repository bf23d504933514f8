#!/usr/bin/env bash
# racecheck (and memcheck) of one workload's kernel under several gemm engines /
# split-K limits, to tell which part a sanitizer report comes from.
#   bash scripts/racecheck_variants.sh small "wgmma 16" "mma 16" "wgmma 1"
set -uo pipefail
cd "$(dirname "$0")/.."
w=$1; shift
out=${OUT:-/tmp/out}/racecheck; mkdir -p "$out"
for v in "$@"; do
  set -- $v
  tag="${w}_$1_k$2"
  python3 tests/gpu_scripts/run_steps.py "$w" bfloat16 1 inplace "$1" "$2" > "$out/$tag.build.log" 2>&1
  for tool in racecheck memcheck; do
    compute-sanitizer --tool $tool --error-exitcode 7 python3 tests/gpu_scripts/run_steps.py "$w" bfloat16 2 inplace "$1" "$2" \
      > "$out/$tag.$tool.log" 2>&1
    echo "$tag $tool rc=$? $(grep -h 'SUMMARY' "$out/$tag.$tool.log" | tail -1)"
  done
done | tee "$out/summary.txt"
tar czf "${OUT:-/tmp/out}/racecheck.tgz" -C "$out" .
