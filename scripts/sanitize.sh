#!/usr/bin/env bash
# Builds zero twice more, with sanitizers, and runs tests under each (not part of scripts/test.sh:
# see README "Sanitizers" for how long it takes):
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer: every CTest case,
#                the mpirun ones included. Leaks inside Open MPI and the libraries it loads are
#                suppressed by library in tests/sanitize/lsan.supp; leak detection stays on.
#   build-tsan/  ThreadSanitizer: the tests of the threaded parts only (see tsan_tests below for
#                which and why), OMP_NUM_THREADS=1 (libgomp is not instrumented).
#   scripts/sanitize.sh [asan|tsan]...   (default: both; JOBS=N to build with N jobs)
# Exits non-zero when a build fails or a test fails; the closing lines say what ran and what the
# sanitizers reported.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
kinds=("$@")
((${#kinds[@]})) || kinds=(asan tsan)
jobs=${JOBS:-$(nproc)}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# ThreadSanitizer slows a test 5-15x, so it runs the tests whose code has more than one thread:
# thread ranks (the communicator, its comm thread, segments, splits and timeouts), the device's
# copy and compute streams, offload's host optimizer thread, the engine's stages on thread ranks,
# divergence checks, engine lifecycles, the task queue, and zero::train() on thread ranks. The
# single-threaded tests (config, planner, data readers, kernels) cannot race; the MPI tests' ranks
# are separate processes, each single-threaded apart from Open MPI's own (uninstrumented) threads.
tsan_targets=(thread_comm_test segmented_comm_test comm_split_test half_comm_test device_test engine_test
              offload_test divergence_test lifecycle_test task_queue_test data_sizes_test)
tsan_tests='^(Worlds/|WorldsAndSegments/|ThreadComm|SelfComm|CommFactory|CommSplit|CommTimeout|CommTopology|Segment|HalfCollectives|All/Devices|CountingDevice|DeviceFactory|StrictDevice|Offload\.|Dtypes/Offload|Divergence|RanksAndStages/Divergence|Stages/Lifecycle|Buckets|OverlapComm|StageTraffic|Stage3Schedule|ModelStages|EngineErrors|TaskQueue|DataSizes)'

# Sanitizer reports in a CTest log: the SUMMARY line of each (kind, file:line, function), and
# UBSan's "file:line:col: runtime error: ..." lines (with halt_on_error it may stop before its SUMMARY).
reports() {
  grep -Eo "SUMMARY: (Address|Leak|Thread|UndefinedBehavior)Sanitizer: .*|[^ ]+:[0-9]+:[0-9]+: runtime error: .*" "$1" 2>/dev/null
}

summary=()
status=0
for kind in "${kinds[@]}"; do
  case $kind in
    asan) flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
          targets=(all); tests=() ;;
    tsan) flags="-fsanitize=thread"
          targets=("${tsan_targets[@]}"); tests=(-R "$tsan_tests") ;;
    *) echo "unknown sanitizer '$kind': asan or tsan" >&2; exit 2 ;;
  esac
  start=$SECONDS
  # Set before the build too: gtest_discover_tests runs the instrumented test binaries.
  # fast_unwind_on_malloc=0: Open MPI's components have no frame pointers, so the fast unwinder
  # loses the stacks and the suppressions (which match by library) could not see libmpi in them.
  export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=1"
  export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export TSAN_OPTIONS="suppressions=$root/tests/sanitize/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
  # OpenMP's runtime (libgomp) is not built with TSan, so the happens-before of its barriers is
  # invisible to it: one OpenMP thread per rank thread (the tests set this too, see
  # tests/CMakeLists.txt) keeps every parallel region on its calling thread.
  [[ $kind == tsan ]] && export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
  build="build-$kind"
  log="$build/sanitize-ctest.log"
  # -O1 -g1: line tables for the reports' stacks at about half the compile time of -O2 -g.
  if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
         -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
         -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null ||
     ! cmake --build "$build" -j"$jobs" --target "${targets[@]}" > "$build/sanitize-build.log" 2>&1; then
    tail -30 "$build/sanitize-build.log" 2>/dev/null
    summary+=("sanitize $kind: BUILD FAILED after $((SECONDS - start)) s (see $build/sanitize-build.log)")
    status=1
    continue
  fi
  built=$((SECONDS - start))
  (cd "$build" && ctest --output-on-failure -j"$(nproc)" --timeout 1200 "${tests[@]}") > "$log" 2>&1
  ok=$?
  ((ok)) && status=1
  ran=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
  [[ -n $ran ]] || ran=$(grep -Eo '100% tests passed, 0 tests failed out of [0-9]+' "$log" | tail -1)
  found=$(reports "$build/Testing/Temporary/LastTest.log" | sort | uniq -c | sort -rn)
  grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|Subprocess|Exception)' "$log" || true
  summary+=("sanitize $kind: built in ${built} s, tests in $((SECONDS - start - built)) s: ${ran:-no CTest summary, see $log}")
  if [[ -n $found ]]; then
    summary+=("  sanitizer reports (count, first line):" "$(sed 's/^/    /' <<<"$found")")
  else
    summary+=("  sanitizer reports: none (suppressions used: tests/sanitize/${kind/asan/lsan}.supp)")
  fi
done
printf '%s\n' "${summary[@]}"
exit $status
