#!/usr/bin/env bash
# preempt.sh DIR ZERO HOW [FLAGS...]: a run of (practically) endless steps with --save and --metrics gets a
# stop signal once step 3 is printed, HOW being one of
#   threads-term   SIGTERM to a --comm threads --ranks 2 process
#   launcher-term  SIGTERM to `zero train --ranks 2` (the process that started mpirun)
#   group-term     SIGTERM to the process group of `zero train --ranks 2` (as Ctrl-C or `timeout`
#                  signal a group): mpirun, in a group of its own, gets it only as forwarded
#   rank1-term     SIGTERM to rank 1 of that job only
#   mpirun-usr1    SIGUSR1 to its mpirun
#   threads-nosave SIGUSR1 to a --comm threads run without --save
#   threads-startup   SIGTERM to a --comm threads run during its start-up: it ends before step 1
#   kill9          SIGKILL to a --comm threads run (no stop: only --metrics is checked)
#   launcher-kill9 SIGKILL to `zero train --ranks 2`: passes when mpirun and the ranks end with it
#   second-term    rank 1 of a --ranks 2 job SIGSTOPped, then SIGTERM twice, 3 s apart, to rank 0
#                  (waiting for rank 1 after its step): passes when rank 0 ends by the second SIGTERM
#                  and the job and both ranks end with it (exit neither 0 nor 75)
# Passes when the run stops after some step K with exit 75 (138 without --save), prints
# "stopped by SIG... after step K", its --metrics holds steps 1..K, one valid JSON line each, and
# `latest` names step K; and when a run resumed from that directory with --steps K+3 and the same
# --metrics file ends with a straight K+3-step run's weights (SHA-256), the metrics file then
# holding steps 1..K+3.
set -u
dir=$1; zero=$2; how=$3; shift 3  # the rest: more flags for every run (--stage 3 --offload optimizer)
rm -rf "$dir"; mkdir -p "$dir"
fail() { echo "FAIL ($how): $*"; for f in "$dir"/*.txt; do echo "--- $f"; tail -n 30 "$f"; done; exit 1; }
case $how in threads-*|kill9) world=(--comm threads --ranks 2) ;; *) world=(--ranks 2) ;; esac
common=("${world[@]}" --sample 0 --set steps_per_print=1 --set model.n_embd=32 --set model.n_layer=2
        --set train_micro_batch_size_per_gpu=2 --stage 2 "$@")
save=(--save "$dir/ck"); [ "$how" = threads-nosave ] || [ "$how" = kill9 ] && save=()

if [ "$how" = threads-startup ]; then  # a 3M-parameter GPT's first validation (200 windows) is the start-up
  : >"$dir/stopped.txt"
  "$zero" train "${common[@]}" --set model.n_embd=256 --set model.n_layer=4 --set data.val_fraction=0.5 --eval-batches 50 \
    --steps 10 --save "$dir/ck" >"$dir/stopped.txt" 2>&1 &
  job=$!
  for _ in $(seq 1 600); do grep -q "^zero train: GPT" "$dir/stopped.txt" && break; sleep 0.1; done
  kill -TERM "$job"
  for _ in $(seq 1 240); do kill -0 "$job" 2>/dev/null || break; sleep 0.25; done
  kill -0 "$job" 2>/dev/null && { kill -9 "$job"; fail "still running 60 s after SIGTERM"; }
  wait "$job"; code=$?
  grep -q "^stopped by SIGTERM before the first step (at step 0 of 10): nothing new to save (exit 75)$" "$dir/stopped.txt" ||
    fail "no 'stopped by SIGTERM before the first step' line"
  [ "$code" -eq 75 ] || fail "expected exit 75, got $code"
  grep -q "^step" "$dir/stopped.txt" && fail "a step ran after SIGTERM"
  echo "ok: SIGTERM during the start-up ended the run before its first step, exit 75"; exit 0
fi
: >"$dir/stopped.txt"
session=(); [ "$how" = group-term ] && session=(setsid)  # its own process group, to signal all of it
"${session[@]}" "$zero" train "${common[@]}" --steps 1000000 "${save[@]}" --metrics "$dir/m.jsonl" >"$dir/stopped.txt" 2>&1 &
job=$!
for _ in $(seq 1 240); do grep -q "^step *3/" "$dir/stopped.txt" && break; sleep 0.25; done
grep -q "^step *3/" "$dir/stopped.txt" || { kill -9 "$job"; fail "no step 3 within 60 s"; }
descendant_with_rank() {  # the process under the job whose environment says OMPI_COMM_WORLD_RANK=$1
  for p in $(pgrep -P "$job") $(for c in $(pgrep -P "$job"); do pgrep -P "$c"; done); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
  done
}
case $how in
  threads-term) kill -TERM "$job"; signal=SIGTERM ;;
  launcher-term) kill -TERM "$job"; signal=SIGUSR1 ;;  # what it forwards to mpirun, and mpirun to the ranks
  group-term) kill -TERM -- "-$job"; signal=SIGUSR1 ;;
  threads-nosave) kill -USR1 "$job"; signal=SIGUSR1 ;;
  kill9) kill -9 "$job"; signal=SIGKILL ;;
  launcher-kill9) ranks=("$(descendant_with_rank 0)" "$(descendant_with_rank 1)" "$(pgrep -P "$job" mpirun)")
                  kill -9 "$job"; signal=SIGKILL ;;
  rank1-term) victim=$(descendant_with_rank 1); [ -n "$victim" ] || { kill -9 "$job"; fail "no rank 1 under $job"; }
              kill -TERM "$victim"; signal=SIGTERM ;;
  second-term) ranks=("$(descendant_with_rank 0)" "$(descendant_with_rank 1)")
               [ -n "${ranks[1]}" ] || { kill -9 "$job"; fail "no rank 1 under $job"; }
               kill -STOP "${ranks[1]}"  # rank 0 finishes its step, then waits for rank 1 in a collective
               kill -TERM "${ranks[0]}"; sleep 3; kill -TERM "${ranks[0]}"; signal="a second SIGTERM" ;;
  mpirun-usr1) mpirun_pid=$(pgrep -P "$job" mpirun); [ -n "$mpirun_pid" ] || { kill -9 "$job"; fail "no mpirun under $job"; }
               kill -USR1 "$mpirun_pid"; signal=SIGUSR1 ;;
  *) kill -9 "$job"; fail "unknown HOW" ;;
esac
for _ in $(seq 1 240); do kill -0 "$job" 2>/dev/null || break; sleep 0.25; done
kill -0 "$job" 2>/dev/null && { kill -9 "$job"; fail "still running 60 s after $signal"; }
wait "$job"; code=$?

gone() {  # every pid given has ended (or is a zombie nobody has reaped yet)
  local p state
  for p in "$@"; do state=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null); [ -z "$state" ] || [ "$state" = Z ] || return 1; done
}
if [ "$how" = launcher-kill9 ]; then
  [ -n "${ranks[1]}" ] && [ -n "${ranks[2]}" ] || fail "no rank 1 or mpirun under the job"
  for _ in $(seq 1 120); do gone "${ranks[@]}" && break; sleep 0.5; done
  gone "${ranks[@]}" || { kill -9 "${ranks[@]}" 2>/dev/null; fail "mpirun or a rank still runs 60 s after zero was killed"; }
  echo "ok: zero killed with SIGKILL: mpirun and both ranks ended with it"; exit 0
fi
if [ "$how" = second-term ]; then
  [ "$code" -ne 0 ] && [ "$code" -ne 75 ] || fail "a job stopped at once exited $code"
  grep -q "exited on signal 15" "$dir/stopped.txt" || fail "mpirun does not say that a rank ended by SIGTERM"
  gone "${ranks[@]}" || { kill -9 "${ranks[@]}" 2>/dev/null; fail "a rank still runs"; }
  echo "ok: with rank 1 stopped (rank 0 waiting for it after its step), a second SIGTERM to rank 0 ended it at once," \
       "and the job with it (exit $code)"; exit 0
fi
steps_in() { python3 -c 'import json,sys; print(" ".join(str(json.loads(l)["step"]) for l in open(sys.argv[1])))' "$1" 2>&1; }
if [ "$how" = kill9 ]; then
  [ "$code" -eq 137 ] || fail "expected 137 after SIGKILL, got $code"
  # A step's line is written before it is printed: the file holds every printed step, perhaps one more.
  last=$(grep -oE "^step +[0-9]+" "$dir/stopped.txt" | tail -n 1 | grep -oE "[0-9]+$")
  got=$(steps_in "$dir/m.jsonl")
  [ "$got" = "$(seq -s ' ' 1 "$last")" ] || [ "$got" = "$(seq -s ' ' 1 $((last + 1)))" ] ||
    fail "--metrics after SIGKILL at step $last holds: $got"
  echo "ok: killed after step $last; --metrics kept steps 1..$last or one more: $got"; exit 0
fi
line=$(grep -E "^stopped by $signal after step [0-9]+ of 1000000" "$dir/stopped.txt") || fail "no 'stopped by $signal after step K' line"
k=$(grep -oE "after step [0-9]+" <<<"$line" | grep -oE "[0-9]+")
expected=75; [ -z "${save[*]}" ] && expected=138
[ "$code" -eq "$expected" ] || fail "expected exit $expected, got $code"
[ "$(steps_in "$dir/m.jsonl")" = "$(seq -s ' ' 1 "$k")" ] || fail "--metrics of a run stopped after step $k holds: $(steps_in "$dir/m.jsonl")"
if [ -z "${save[*]}" ]; then echo "ok: $signal stopped the run after step $k, exit $code, --metrics holds steps 1..$k"; exit 0; fi
[ "$(cat "$dir/ck/latest")" = "$(printf 'step-%08d' "$k")" ] || fail "latest is '$(cat "$dir/ck/latest")', not step $k"

n=$((k + 3))
"$zero" train "${common[@]}" --steps "$n" >"$dir/straight.txt" 2>&1 || fail "straight run"
"$zero" train "${common[@]}" --steps "$n" --resume "$dir/ck" --metrics "$dir/m.jsonl" >"$dir/resumed.txt" 2>&1 || fail "resumed run"
grep -q "^resumed from $dir/ck/step-0*$k at step $k" "$dir/resumed.txt" || fail "did not resume from step $k"
sha() { grep -oE "final weights sha256 [0-9a-f]+" "$1"; }
[ -n "$(sha "$dir/straight.txt")" ] && [ "$(sha "$dir/straight.txt")" = "$(sha "$dir/resumed.txt")" ] ||
  fail "resumed weights differ from the straight run: $(sha "$dir/straight.txt") vs $(sha "$dir/resumed.txt")"
[ "$(steps_in "$dir/m.jsonl")" = "$(seq -s ' ' 1 "$n")" ] || fail "--metrics after the resume holds: $(steps_in "$dir/m.jsonl")"
echo "ok: $signal ($how) stopped the run after step $k with exit 75 and checkpoint step $k; resumed to step $n with the" \
     "straight run's weights; --metrics holds steps 1..$n"
