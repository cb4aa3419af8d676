#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/, clang-14, ASan + UBSan; into build-fuzz/) and runs
# each for a bounded time from the seed corpus in tests/fuzz/corpus/, in libFuzzer's fork mode so
# one crash does not end the run. Then replays every crash input it found and classifies it
# against tests/fuzz/known_crashes.txt: a crash of a known class (being fixed elsewhere) is
# reported and tolerated, and so is an input that runs fine when replayed alone (a libFuzzer
# timeout on a loaded machine); any other crash, hang (60 s) or out-of-memory fails, kept in
# build-fuzz/run/TARGET/artifacts/ (copy it to tests/fuzz/crashes/TARGET/ as a regression test).
#   scripts/fuzz.sh [SECONDS_PER_HARNESS]   (default 12, about a minute for the five; scripts/test.sh uses the default)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-12}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S tests/fuzz -B build-fuzz -DCMAKE_CXX_COMPILER=clang++-14 "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j"$(nproc)" >/dev/null

known_class() {  # known_class TARGET REPORT_FILE: prints the known class the report matches, if any
  local target=$1 report=$2 t class regex
  while read -r t class regex; do
    [[ -z "$t" || "$t" == \#* || "$t" != "$target" ]] && continue
    if grep -qE -- "$regex" "$report"; then echo "$class"; return; fi
  done < tests/fuzz/known_crashes.txt
}

failed=0
for target in config data flags manifest checkpoint; do
  work=build-fuzz/run/$target
  rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts" "$work/scratch"
  cp tests/fuzz/corpus/$target/* "$work/corpus/"
  start=$SECONDS
  ZERO_FUZZ_SCRATCH=$work/scratch build-fuzz/fuzz_$target -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
    -timeout=20 -rss_limit_mb=2048 -max_total_time="$seconds" -dict=tests/fuzz/$target.dict \
    -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1 || true
  runs=$(grep -oE '^#[0-9]+' "$work/log" | tail -1 | tr -d '#')
  new=0 known=0
  for input in "$work"/artifacts/*; do
    [ -e "$input" ] || continue
    report=$input.report
    code=0
    ZERO_FUZZ_SCRATCH=$work/scratch timeout 60 build-fuzz/fuzz_$target "$input" >"$report" 2>&1 || code=$?
    class=$(known_class "$target" "$report")
    if ((code == 0)); then  # a slow input under load (libFuzzer's -timeout) that runs fine alone
      echo "fuzz $target: did not reproduce when replayed alone (slow under load?): $input"
    elif [ -n "$class" ]; then
      known=$((known + 1))
      echo "fuzz $target: known crash ($class, listed in tests/fuzz/known_crashes.txt): $input"
    else
      new=$((new + 1))
      echo "fuzz $target: NEW crash, hang or out-of-memory: $input (report: $report)"
      grep -E "zero-fuzz:|SUMMARY|ERROR" "$report" | head -3 | sed 's/^/    /'
    fi
  done
  echo "fuzz $target: ${runs:-0} inputs in $((SECONDS - start)) s; $known known crash(es), $new new"
  ((new == 0)) || failed=1
  rm -rf "$work/scratch"
done
if ((failed)); then
  echo "fuzz: FAILED: a crash not listed in tests/fuzz/known_crashes.txt (see above)"
  exit 1
fi
echo "fuzz: ok (no crash outside the known classes)"
