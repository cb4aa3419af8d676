#!/usr/bin/env bash
# checkpoint_owner.sh DIR ZERO [TRAIN_ARGS...]: one run owns a save directory. While run A
# trains with --save DIR (TRAIN_ARGS, e.g. --ranks 2: A's launching process becomes mpirun and
# holds the lock for the job), a second run B with --save DIR fails at start-up naming A's host
# and pid, before any rank starts (no header printed, so mpirun was never launched) and without
# touching DIR; a job started directly under mpirun (no launcher: its rank 0 takes the lock) is
# refused the same way before its first step.
# A job started directly under mpirun holds the directory as well (its rank 0), and once A is
# stopped the directory can be taken again: the kernel released the lock with its holder.
set -u
dir=$1; zero=$2; shift 2
rm -rf "$dir"; mkdir -p "$dir"
small=(--sample 0 --set model.n_embd=16 --set model.n_layer=1 --set train_micro_batch_size_per_gpu=2)
mpi=(mpirun --allow-run-as-root --oversubscribe -np 2 "$zero" train --comm mpi)
fail=0
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT
wait_for_lock() {  # wait_for_lock DIR: until DIR/lock names a holder (60 s at most)
  for _ in $(seq 600); do grep -q "pid" "$1/lock" 2>/dev/null && return 0; sleep 0.1; done
  echo "FAIL: nobody took $1/lock"; cat "$dir"/*.txt; exit 1
}
refused() {  # refused REGEX OUTFILE COMMAND...: fails with REGEX before any training step
  local regex=$1 out=$2; shift 2
  timeout 120 "$@" >"$out" 2>&1 && { echo "FAIL: a second run saved into an owned directory: $*"; fail=1; return; }
  if ! grep -qE -- "$regex" "$out" || grep -qE "^step +1/" "$out"; then
    echo "FAIL: wanted /$regex/ before any step: $*"; cat "$out"; fail=1; return
  fi
  echo "ok: $(grep -oE -- "$regex" "$out")"
}
launcher_refused() {  # as refused, and no rank started: the launching process refused before mpirun
  refused "$@"
  if grep -q "^zero train: GPT" "$2"; then echo "FAIL: ranks started before the refusal: $*"; cat "$2"; fail=1; fi
}
"$zero" train "${small[@]}" "$@" --steps 1000000 --save "$dir/ck" >"$dir/a.txt" 2>&1 &
a=$!; pids+=("$a")
wait_for_lock "$dir/ck"
held="is in use by another run \(zero train on host $(hostname), pid $a, holds $dir/ck/lock\)"
launcher_refused "$held" "$dir/b.txt" "$zero" train "${small[@]}" "$@" --steps 2 --save "$dir/ck"
launcher_refused "$held" "$dir/b_resume.txt" "$zero" train "${small[@]}" "$@" --steps 2 --resume "$dir/ck" --save "$dir/ck"
refused "$held" "$dir/b_mpi.txt" "${mpi[@]}" "${small[@]}" --steps 2 --save "$dir/ck"
[ -z "$(ls "$dir/ck" | grep -v '^lock$')" ] || { echo "FAIL: the refused runs wrote into $dir/ck: $(ls "$dir/ck")"; fail=1; }
# A job started directly under mpirun: its rank 0 owns the directory.
"${mpi[@]}" "${small[@]}" --steps 1000000 --save "$dir/ck2" >"$dir/a_mpi.txt" 2>&1 &
pids+=($!)
wait_for_lock "$dir/ck2"
launcher_refused "is in use by another run \(zero train on host $(hostname), pid [0-9]+, holds $dir/ck2/lock\)" "$dir/b2.txt" \
  "$zero" train "${small[@]}" "$@" --steps 2 --save "$dir/ck2"
kill "$a"; wait "$a" 2>/dev/null
for _ in 1 2 3 4 5; do  # mpirun's ranks may take a moment to exit after it
  "$zero" train "${small[@]}" "$@" --steps 1 --save "$dir/ck" >"$dir/c.txt" 2>&1
  grep -q "in use by another run" "$dir/c.txt" || break
  sleep 2
done
if grep -q "in use by another run" "$dir/c.txt"; then echo "FAIL: the lock outlived its run"; cat "$dir/c.txt"; fail=1; fi
[ "$fail" -eq 0 ] && echo "ok: one owner per save directory"
exit "$fail"
