#!/usr/bin/env bash
# Builds zero twice more, with sanitizers, and runs the test suite under each (not part of
# scripts/test.sh: see README "Sanitizers" for how long it takes):
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer (every test, MPI ones included),
#                with LeakSanitizer on; Open MPI's known leak reports suppressed by
#                tests/sanitize/lsan.supp (by library, not by turning leak detection off).
#   build-tsan/  ThreadSanitizer: the tests of the threaded parts (thread ranks, the comm thread,
#                the device's streams, offload's CPU optimizer thread, divergence), races inside
#                uninstrumented runtimes suppressed by tests/sanitize/tsan.supp.
#   scripts/sanitize.sh [asan|tsan]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
kinds=("$@")
((${#kinds[@]})) || kinds=(asan tsan)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
for kind in "${kinds[@]}"; do
  case $kind in
    asan) flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
          tests=() ;;
    tsan) flags="-fsanitize=thread"
          tests=(-R "ThreadComm|CommTimeout|Split|Segmented|Device|Offload|Divergence|Lifecycle|Stages|Buckets|TaskQueue") ;;
    *) echo "unknown sanitizer '$kind': asan or tsan" >&2; exit 2 ;;
  esac
  start=$SECONDS
  # Set before the build too: gtest_discover_tests runs the instrumented test binaries.
  # fast_unwind_on_malloc=0: Open MPI's components have no frame pointers, so the fast unwinder loses
  # the stacks and the suppressions (which match by library) could not see libmpi in them.
  export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=1:detect_stack_use_after_return=0"
  export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export TSAN_OPTIONS="suppressions=$root/tests/sanitize/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
  cmake -S . -B "build-$kind" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
  cmake --build "build-$kind" -j"$(nproc)" >/dev/null
  built=$((SECONDS - start))
  (cd "build-$kind" && ctest --output-on-failure -j"$(nproc)" --timeout 1200 "${tests[@]}")
  echo "sanitize $kind: built in ${built} s, tests in $((SECONDS - start - built)) s"
done
