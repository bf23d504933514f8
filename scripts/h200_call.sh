#!/usr/bin/env bash
# One device call of a validation session: the named parts in order, each under its own
# timeout, every log and JSON packed into $OUT/<tag>.tgz at the end (the device tool brings
# back at most 8 files). Parts:
#   hgemm         benchmarks/hgemm_gpu_session.sh (smoke, gemm.json, GPU tests, memcheck, SASS)
#   probe-ingress benchmarks/probes/ingress_probe.cu: bytes a cycle one SM's shared memory takes in
#                 from L2, by TMA multicast in a cluster and by DSMEM pushes (perf-log step 91)
#   probe-stores  benchmarks/probes/store_probe.cu: cycles a 128 x 64 bf16 tile's stores take by the width
#                 of a thread's store (the row walk's 2 bytes, 4, 16, bulk rows; perf-log step 94)
#   probe-pitch   resident_probe --pitch on $PROBE_SPECS (padded against dense homes)
#   probe-base    resident_probe --auto on $PROBE_SPECS from the tree staged in .stage/base
#   hgemm-tests   the Hopper GEMM's GPU tests alone (tests/test_hopper_gemm.py, prebuilt library)
#   probe-pdl     resident_probe --pdl on $PDL_SPECS (programmatic launch against plain)
#   probe-reduce  resident_probe --reduce on $REDUCE_SPECS (grid reductions, new against old)
#   probe-ksplit  resident_probe --ksplit on $REDUCE_SPECS (split-K against whole-K gemms)
#   probe-engine  resident_probe --engine on $ENGINE_SPECS (wgmma gemm engine against mma.sync)
#   probe-tiles   resident_probe --tiles on $TILE_SPECS (grid gemm tile and block size)
#   probe-epilogue resident_probe --epilogue on $ENGINE_SPECS (staged gemm epilogues against inline loads)
#   probe-wide    resident_probe --wide on $ENGINE_SPECS (128 x 256 wgmma tiles, column-reduction loads)
#   probe-target  resident_probe --target on $TARGET_SPECS: target variants, '|'-separated in
#                 $TARGET_VARIANTS (each 'field=v[,v];field=v'; an empty one is the target as it is)
#   probe-knobs   probe-target once per nvcc define set of $KNOB_SETS ('|'-separated, e.g.
#                 "|-DTK_SPLITK_ACQ_REL=1": an empty set is the library as it is), each under
#                 NVCC_APPEND_FLAGS (the build cache keys on it); the part's limit is per set
#   probe-compile benchmarks/compile_probe.py on $COMPILE_SPECS once per nvcc flag set of $KNOB_SETS
#                 (cold compile seconds as the harness measures them; perf-log step 95)
#   probe-merge   resident_probe --merge on $MERGE_SPECS: tk-fuse's merge modes ($MERGE_MODES,
#                 default none,maps; MODE+casts: tk-fuse input_casts too; perf-log steps 26, 70)
#   probe-col-loads resident_probe --col-loads $COL_LOADS (default 16,32) on $COL_SPECS (column sums'
#                 loads in flight a thread, perf-log step 29)
#   unit-timer    resident_probe --unit-timer on $TIMER_SPECS (phases, and each wgmma unit of block 0)
#   timer         resident_probe --timer on $TIMER_SPECS (per-op / per-phase cycles; resident kernels
#                 also in a loop of 4 steps in one launch, each step its line)
#   ncu-loop      scripts/diag/loop_profile.py under ncu on $NCU_SPECS (default online classification):
#                 warp-state samples of one launch of a 20-step loop, line by line (cuda and sass views)
#   op-timer      resident_probe --op-timer on $TIMER_SPECS (grid kernels: each op's slowest block)
#   probe-full-loads resident_probe --full-loads on $ENGINE_SPECS (full reductions 1 against 16 loads in flight)
#   probe-final   resident_probe --final on $ENGINE_SPECS (final grid barrier by rule / never / a fence / always)
#   probe-launch  resident_probe --launch on $LAUNCH_SPECS (in-place graph vs direct launches vs staged graph)
#   tests         the GPU suite without the Hopper GEMM and runtime tests, pytest-xdist -n $JOBS ($TESTS: files;
#                 $TESTS_FILE: a file of node ids, one a line, e.g. a cut run's gpu_tests_rest.txt)
#   tests-runtime tests/test_runtime_cuda.py without xdist: its session fixture builds every case
#                 at once (build_many, all cores); under xdist each worker would build them all again
#   bench         the harness on $WORKLOADS (default all; $BENCH_FLAGS as for bench-twins)
#   bench-twins   the harness's twins ($BENCH_FLAGS: e.g. --fuse-merge maps, perf-log steps 17 and 26)
#   tests-train   tests/test_train_cuda.py (new ops, compile_module trajectories)
#   diag-update-map scripts/diag/update_map.py --run on $UPDATE_TWINS (default the two resident
#                 twins): the optimizer-update map alone, cycles a run, per variant and operands
#   probe         resident_probe --auto on the suite and unseen shapes
#   racecheck-diag racecheck on $RACE_WORKLOAD (default small), one try per entry of $RACE_SPECS,
#                 each a gemm engine with optional nvcc defines ("auto:-DTK_NO_ROWS_PRELOAD"; default
#                 "auto auto mma"), every hazard reported (--racecheck-report all)
#   usage: bash scripts/h200_call.sh <tag> part[:seconds] ...   (default limit 570 s a part)
# e.g. a validation session's calls, each within the device tool's 10 minutes (run a of
# 2026-12-03: the whole GPU suite in one call, 76 + 191 + 225 s; the harness in two, 282 + 185 s):
#   JOBS=16 bash scripts/h200_call.sh a hgemm-tests:100 tests:250 tests-runtime:240
#   (tests-runtime took 190-270 s; in the ninth session 230 s cut it at 141 of 162 items: the
#   next call ran the rest with pytest -k, results/h200/run-56c1704-a/gpu_tests_runtime_rest.log)
#   WORKLOADS=tiny,small,medium,large bash scripts/h200_call.sh b bench:540
#   bash scripts/h200_call.sh c bench-twins:400
#   bash scripts/h200_call.sh k tests-train:270
# On the device machine, install the carried wheels first (../shared/gpu-wheels.sh); copy what
# comes back under results/h200/, merge the harness calls of one commit (a twin and its
# partner from the same call) and regenerate the README table:
#   python -m benchmarks.report --merge run-X-c=results/h200/run-X-c/h200/train_loop.json:small,medium \
#       run-X-e=results/h200/run-X-e/h200/train_loop_twins.json:online,online-adam --note "..."
#   python -m benchmarks.report --json results/h200/train_loop.json --embed README.md
set -uo pipefail
cd "$(dirname "$0")/.."
tag=$1; shift
root=${OUT:-/tmp/out}; W=$root/$tag; mkdir -p "$W"
export PYTHONUNBUFFERED=1
PROBE_SPECS=${PROBE_SPECS:-tiny online classification small online:33,100,300,7}
# The SM clock, power and throttle reasons every 250 ms through the whole call.
(nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
   --format=csv -lms 250 > "$W/smi.csv" 2>&1 || nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu \
   --format=csv -lms 250 > "$W/smi.csv" 2>&1) & SMI=$!
log() { echo "[$(date +%T)] $*" | tee -a "$W/calls.log"; }
for item in "$@"; do
  part=${item%%:*}; t=${item#*:}; [[ $t == "$item" ]] && t=570
  log "begin $part (limit $t s)"
  case $part in
    hgemm) OUT=$W/hgemm T_SMOKE=${T_SMOKE:-150} T_BENCH=200 T_TESTS=$((t - 310)) T_SAN=40 PYTEST_ADDOPTS="-n 8" \
             timeout "$t" bash benchmarks/hgemm_gpu_session.sh > "$W/hgemm.log" 2>&1 ;;
    probe-ingress) timeout "$t" bash -c 'nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -o /tmp/ingress \
               benchmarks/probes/ingress_probe.cu && /tmp/ingress' > "$W/probe_ingress.log" 2>&1 ;;
    probe-stores) timeout "$t" bash -c 'nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -o /tmp/stores \
               benchmarks/probes/store_probe.cu && /tmp/stores' > "$W/probe_stores.log" 2>&1 ;;
    probe-pitch) mkdir -p "$W/pitch"; OUT=$W/pitch timeout "$t" python3 -m benchmarks.resident_probe --pitch $PROBE_SPECS \
             > "$W/probe_pitch.log" 2>&1 ;;
    probe-base) mkdir -p "$W/base"; (cd .stage/base && OUT=$W/base PYTHONPATH=/tmp/site:$PWD timeout "$t" \
             python3 -m benchmarks.resident_probe --auto $PROBE_SPECS) > "$W/probe_base.log" 2>&1 ;;
    hgemm-tests) TK_HGEMM_BUILD_DIR=$PWD/build/hgemm timeout "$t" python3 -m pytest -m cuda -q -p no:cacheprovider -n 8 \
             tests/test_hopper_gemm.py > "$W/hgemm_tests.log" 2>&1 ;;
    probe-pdl) mkdir -p "$W/pdl"; OUT=$W/pdl timeout "$t" python3 -m benchmarks.resident_probe --pdl \
             ${PDL_SPECS:-tiny online classification online:33,100,300,7} > "$W/probe_pdl.log" 2>&1 ;;
    probe-reduce) mkdir -p "$W/reduce"; OUT=$W/reduce timeout "$t" python3 -m benchmarks.resident_probe --reduce \
             ${REDUCE_SPECS:-small mlp4 medium} > "$W/probe_reduce.log" 2>&1 ;;
    probe-ksplit) mkdir -p "$W/ksplit"; OUT=$W/ksplit timeout "$t" python3 -m benchmarks.resident_probe --ksplit \
             ${REDUCE_SPECS:-small mlp4 medium} > "$W/probe_ksplit.log" 2>&1 ;;
    probe-engine) mkdir -p "$W/engine"; OUT=$W/engine timeout "$t" python3 -m benchmarks.resident_probe --engine \
             ${ENGINE_SPECS:-small mlp4 medium large} > "$W/probe_engine.log" 2>&1 ;;
    probe-tiles) mkdir -p "$W/tiles"; OUT=$W/tiles timeout "$t" python3 -m benchmarks.resident_probe --tiles \
             ${TILE_SPECS:-small mlp4 medium large} > "$W/probe_tiles.log" 2>&1 ;;
    probe-epilogue) mkdir -p "$W/epilogue"; OUT=$W/epilogue timeout "$t" python3 -m benchmarks.resident_probe --epilogue \
             ${ENGINE_SPECS:-small mlp4 medium large} > "$W/probe_epilogue.log" 2>&1 ;;
    probe-wide) mkdir -p "$W/wide"; OUT=$W/wide timeout "$t" python3 -m benchmarks.resident_probe --wide \
             ${ENGINE_SPECS:-small mlp4 medium large} > "$W/probe_wide.log" 2>&1 ;;
    probe-full-loads) mkdir -p "$W/full"; OUT=$W/full timeout "$t" python3 -m benchmarks.resident_probe --full-loads \
             ${ENGINE_SPECS:-small mlp4 medium} > "$W/probe_full_loads.log" 2>&1 ;;
    probe-final) mkdir -p "$W/final"; OUT=$W/final timeout "$t" python3 -m benchmarks.resident_probe --final \
             ${ENGINE_SPECS:-small mlp4 medium large} > "$W/probe_final.log" 2>&1 ;;
    probe-launch) mkdir -p "$W/launch"; OUT=$W/launch timeout "$t" python3 -m benchmarks.resident_probe --launch \
             ${LAUNCH_SPECS:-medium large} > "$W/probe_launch.log" 2>&1 ;;
    probe-target) mkdir -p "$W/target"; IFS='|' read -r -a tv <<< "${TARGET_VARIANTS:-}"
             OUT=$W/target timeout "$t" python3 -m benchmarks.resident_probe --target "${tv[@]}" -- \
             ${TARGET_SPECS:-small mlp4} > "$W/probe_target.log" 2>&1 ;;
    probe-knobs) IFS='|' read -r -a tv <<< "${TARGET_VARIANTS:-}"; IFS='|' read -r -a ks <<< "${KNOB_SETS:-}"
             [[ ${#ks[@]} -eq 0 ]] && ks=("")
             for i in "${!ks[@]}"; do
               mkdir -p "$W/knobs/$i"; echo "=== NVCC_APPEND_FLAGS='${ks[$i]}'" >> "$W/probe_knobs.log"
               NVCC_APPEND_FLAGS="${ks[$i]}" OUT=$W/knobs/$i timeout "$t" python3 -m benchmarks.resident_probe --target \
                 "${tv[@]}" -- ${TARGET_SPECS:-small mlp4} >> "$W/probe_knobs.log" 2>&1
             done ;;
    probe-compile) IFS='|' read -r -a ks <<< "${KNOB_SETS:-}"; [[ ${#ks[@]} -eq 0 ]] && ks=("")
             mkdir -p "$W/compile"
             for i in "${!ks[@]}"; do
               NVCC_APPEND_FLAGS="${ks[$i]}" OUT=$W/compile timeout "$t" python3 -m benchmarks.compile_probe \
                 --repeat "${COMPILE_REPEAT:-1}" ${COMPILE_SPECS:-} >> "$W/probe_compile.log" 2>&1
             done ;;
    probe-merge) mkdir -p "$W/merge"; OUT=$W/merge timeout "$t" python3 -m benchmarks.resident_probe --merge \
             "${MERGE_MODES:-none,maps}" ${MERGE_SPECS:-online-adam classification-adamw-ce mlp4-adamw-ce} \
             > "$W/probe_merge.log" 2>&1 ;;
    probe-col-loads) mkdir -p "$W/col"; OUT=$W/col timeout "$t" python3 -m benchmarks.resident_probe --col-loads \
             "${COL_LOADS:-16,32}" ${COL_SPECS:-medium large} > "$W/probe_col_loads.log" 2>&1 ;;
    unit-timer) timeout "$t" python3 -m benchmarks.resident_probe --unit-timer \
             ${TIMER_SPECS:-small mlp4} > "$W/unit_timer.log" 2>&1 ;;
    op-timer) timeout "$t" python3 -m benchmarks.resident_probe --op-timer \
             ${TIMER_SPECS:-} > "$W/op_timer.log" 2>&1 ;;  # default: the probe's own spec list
    timer) timeout "$t" python3 -m benchmarks.resident_probe --timer \
             ${TIMER_SPECS:-tiny online classification small mlp4 medium large} > "$W/timer.log" 2>&1 ;;
    tests) if [ -n "${TESTS_FILE:-}" ]; then readarray -t sel < "$TESTS_FILE"  # node ids hold spaces
           else sel=(${TESTS:-tests/ --ignore=tests/test_hopper_gemm.py --ignore=tests/test_runtime_cuda.py}); fi
           timeout "$t" python3 -m pytest -m cuda -v -p no:cacheprovider --durations=25 -n "${JOBS:-12}" \
             "${sel[@]}" > "$W/gpu_tests.log" 2>&1 ;;
    ncu-loop) mkdir -p "$W/ncu"; for s in ${NCU_SPECS:-online classification}; do
             PYTHONPATH=$PWD:${PYTHONPATH:-} NVCC_APPEND_FLAGS=-lineinfo timeout "$t" ncu --clock-control none -k 'regex:tk_.*_kernel' -c 1 \
               --section SourceCounters --section WarpStateStats --import-source yes -f -o "$W/ncu/$s" \
               python3 scripts/diag/loop_profile.py --run "$s" "$W/ncu" > "$W/ncu/$s.log" 2>&1
             for view in cuda sass; do
               timeout 60 ncu -i "$W/ncu/$s.ncu-rep" --page source --csv --print-source "$view" \
                 > "$W/ncu/$s.$view.csv" 2>> "$W/ncu/$s.log"
             done
             timeout 60 ncu -i "$W/ncu/$s.ncu-rep" --page details --csv > "$W/ncu/$s.details.csv" 2>> "$W/ncu/$s.log"
           done ;;
    tests-runtime) timeout "$t" python3 -m pytest -m cuda -v -p no:cacheprovider --durations=25 \
             tests/test_runtime_cuda.py > "$W/gpu_tests_runtime.log" 2>&1 ;;
    bench) mkdir -p "$W/h200"; timeout "$t" python3 -m benchmarks.train_loop ${BENCH_FLAGS:-} ${WORKLOADS:+--workloads "$WORKLOADS"} \
             --out "$W/h200/train_loop.json" > "$W/train_loop.log" 2>&1 ;;
    bench-twins) mkdir -p "$W/h200"; timeout "$t" python3 -m benchmarks.train_loop ${BENCH_FLAGS:-} \
             --workloads "${TWIN_WORKLOADS:-online,classification,mlp4}" --twins \
             --out "$W/h200/train_loop_twins.json" > "$W/train_loop_twins.log" 2>&1 ;;
    diag-update-map) for twin in ${UPDATE_TWINS:-classification-adamw-ce online-adam}; do
             timeout "$t" python3 scripts/diag/update_map.py --run --twin "$twin" --out "$W/update_map/$twin"
             done > "$W/update_map.log" 2>&1 ;;
    tests-train) timeout "$t" python3 -m pytest -m cuda -v -p no:cacheprovider --durations=25 \
             tests/test_train_cuda.py > "$W/gpu_tests_train.log" 2>&1 ;;
    probe) mkdir -p "$W/probe"; OUT=$W/probe timeout "$t" python3 -m benchmarks.resident_probe --auto \
             > "$W/probe.log" 2>&1 ;;
    racecheck-diag) mkdir -p "$W/race"; timeout "$t" bash -c '
             san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
             i=0
             for spec in $2; do
               i=$((i + 1)); engine=${spec%%:*}; flags=; [[ $spec == *:* ]] && flags=${spec#*:}
               export NVCC_APPEND_FLAGS="-lineinfo $flags"  # reports with source lines
               python3 tests/gpu_scripts/run_steps.py "$1" bfloat16 1 inplace "$engine" > "$0/build_$i.log" 2>&1
               "$san" --tool racecheck --racecheck-report all --print-limit 60 --error-exitcode 7 \
                 python3 tests/gpu_scripts/run_steps.py "$1" bfloat16 2 inplace "$engine" > "$0/race_$i.log" 2>&1
               echo "try $i $spec rc=$? $(grep -h SUMMARY "$0/race_$i.log" | tail -1)"
             done' "$W/race" "${RACE_WORKLOAD:-small}" "${RACE_SPECS:-auto auto mma}" > "$W/racecheck_diag.log" 2>&1 ;;
    *) log "unknown part $part" ;;
  esac
  log "end $part rc=$?"
done
pkill -P $SMI 2>/dev/null; kill $SMI 2>/dev/null  # the sampler (its nvidia-smi is the subshell's child); not pkill -f, which matches a caller whose command line names nvidia-smi too
tar czf "$root/$tag.tgz" -C "$W" .
tail -n 25 "$W"/*.log | cut -c1-240 | tail -n 150
