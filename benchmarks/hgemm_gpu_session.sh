#!/bin/bash
# One device call for the Hopper GEMM tile: smoke (one process per layout),
# the benchmark, the GPU tests, one compute-sanitizer memcheck pass.
# Expects the prebuilt libraries in build/hgemm (hgemm_lib.build() reuses
# them by digest; it rebuilds there if the sources changed) and $OUT.
# STAGES: which of smoke,bench,tests,sanitize,sass to run (default all; the
# later ones run only if the smoke passed); T_SMOKE, T_BENCH, T_TESTS, T_SAN:
# their timeouts in seconds; BENCH_ARGS: benchmarks/gemm.py's arguments.
#
# The device tool sends the SESSION's checkout (not a helper's worktree; seen
# 2026-12-01: a call from /work/wt-gemm found neither these files nor the
# carried build/hgemm). From a worktree, stage a copy into an ignored folder
# of the session's checkout and carry that:
#   W=/work/wt-gemm; S=/work/main; mkdir -p $S/.hgemm
#   grep -qx '/.hgemm/' $S/.git/info/exclude || echo /.hgemm/ >> $S/.git/info/exclude
#   (cd $W && git archive HEAD | tar -x -C $S/.hgemm && mkdir -p $S/.hgemm/build &&
#    cp -r build/hgemm $S/.hgemm/build/ && git rev-parse HEAD > $S/.hgemm/build/hgemm/STAMP)
#   run(carry=[".whl", ".hgemm"], command="python3 -m pip install -q --no-index
#     --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1; cd .hgemm &&
#     export PYTHONPATH=/tmp/site:$PWD && bash benchmarks/hgemm_gpu_session.sh")
# (build/hgemm holds libtk_hgemm-<digest>.so for the sources' digest, with and
# without the watchdog; without them the scripts rebuild there, ~1 minute.)
set -u
OUT=${OUT:-/tmp/hgemm_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TK_HGEMM_BUILD_DIR=$PWD/build/hgemm
STAGES=${STAGES:-smoke,bench,tests,sanitize,sass}
BENCH_ARGS=${BENCH_ARGS:---sweep}
log() { echo "[$(date +%T)] $*"; }
{
  log "tree: $PWD stamp: $(cat build/hgemm/STAMP 2>/dev/null)"
  ls build/hgemm/*.so
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  python3 -c "import torch;print('torch', torch.__version__, torch.cuda.get_device_name())"
} 2>&1 | tee "$OUT/env.log"
smoke_ok=1
if [[ $STAGES == *smoke* ]]; then
  log "smoke"
  timeout ${T_SMOKE:-50} python3 -m benchmarks.hgemm_smoke 2>&1 | tee "$OUT/smoke.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || smoke_ok=0
  log "smoke ok=$smoke_ok"
fi
if [[ $smoke_ok == 1 && $STAGES == *bench* ]]; then
  log "bench"
  timeout ${T_BENCH:-80} python3 -m benchmarks.gemm --out "$OUT/gemm.json" $BENCH_ARGS 2>&1 | tee "$OUT/bench.log"
fi
if [[ $smoke_ok == 1 && $STAGES == *tests* ]]; then
  log "tests"
  timeout ${T_TESTS:-70} python3 -m pytest -q -m cuda tests/test_hopper_gemm.py -p no:cacheprovider 2>&1 | tee "$OUT/tests.log" | tail -30
fi
if [[ $smoke_ok == 1 && $STAGES == *sanitize* ]]; then
  log "sanitize"
  HGEMM_SMOKE_QUICK=1 timeout ${T_SAN:-35} compute-sanitizer --tool memcheck --print-limit 5 \
    python3 -m benchmarks.hgemm_smoke --one TN 2>&1 | tail -25 | tee "$OUT/sanitize.log"
fi
if [[ $STAGES == *sass* ]]; then
  cuobjdump --dump-sass build/hgemm/libtk_hgemm-*.so 2>/dev/null | grep -oE "HGMMA[.A-Z0-9x]*|UTMALDG[.A-Z0-9]*|SYNCS[.A-Z0-9]*" | sort | uniq -c | head -20 | tee "$OUT/sass.log"
fi
log "done"
