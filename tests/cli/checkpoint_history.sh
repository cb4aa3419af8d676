#!/usr/bin/env bash
# checkpoint_history.sh DIR ZERO [TRAIN_ARGS...]: a save directory holds one run's history.
#  - --resume DIR/step-2 --save DIR while DIR holds steps 3 and 4: refused before launch, naming
#    them, DIR unchanged (it used to end in an internal error after training, or replace them).
#  - forking from step 2 into a new directory works; resuming from DIR into that fork's directory
#    (another run's checkpoints) is refused, with --keep 1 too (it used to delete them).
#  - continuing DIR from its latest with --keep 2 rotates DIR's own history: steps 5 and 6 left.
#  - --keep that cannot remove an old checkpoint (an immutable directory, chattr +i) warns and
#    the run goes on and publishes (it used to die with an escaped filesystem_error).
set -u
dir=$1; zero=$2; shift 2
rm -rf "$dir"; mkdir -p "$dir"
small=(--sample 0 --set model.n_embd=16 --set model.n_layer=1 --set train_micro_batch_size_per_gpu=2)
fail=0
listing() { (cd "$1" && find . -type f ! -name lock | sort | xargs sha256sum); }  # lock: the holder line of the last run that asked
run() { "$zero" train "${small[@]}" "$@" >"$dir/run.txt" 2>&1 || { echo "FAIL: $*"; cat "$dir/run.txt"; exit 1; }; }
refused() {  # refused REGEX TRAIN_FLAGS...: fails with REGEX before any rank starts
  local regex=$1; shift
  local out
  out=$(timeout 120 "$zero" train "${small[@]}" "$@" 2>&1) && { echo "FAIL: ran: $*"; fail=1; return; }
  if ! grep -qE -- "$regex" <<<"$out" || grep -q "^zero train: GPT" <<<"$out"; then
    echo "FAIL: wanted /$regex/ before launch: $*"; echo "$out"; fail=1; return
  fi
  echo "ok: $(grep -oE -- "$regex" <<<"$out")"
}
run "$@" --steps 4 --save-every 1 --save "$dir/a"
before=$(listing "$dir/a")
refused "--resume $dir/a/step-00000002 goes back to step 2, but --save $dir/a holds later checkpoints \(step-00000003, step-00000004; latest step-00000004\).*pass a new --save directory" \
  "$@" --steps 6 --resume "$dir/a/step-00000002" --save "$dir/a"
run "$@" --steps 3 --resume "$dir/a/step-00000002" --save "$dir/b"
b_before=$(listing "$dir/b")
refused "--save $dir/b already holds checkpoints of another run \(latest: step-00000003\) and this run resumes from $dir/a/step-00000004" \
  "$@" --steps 6 --resume "$dir/a" --save "$dir/b" --keep 1
[ "$before" = "$(listing "$dir/a")" ] && [ "$b_before" = "$(listing "$dir/b")" ] || { echo "FAIL: a refused run changed a directory"; fail=1; }
run "$@" --steps 6 --save-every 1 --keep 2 --resume "$dir/a" --save "$dir/a"
[ "$(ls "$dir/a" | tr '\n' ' ')" = "latest lock step-00000005 step-00000006 " ] || { echo "FAIL: --keep 2 left $(ls "$dir/a")"; fail=1; }
# An old checkpoint that cannot be removed.
if chattr +i "$dir/a/step-00000005" 2>/dev/null; then
  out=$("$zero" train "${small[@]}" "$@" --steps 8 --save-every 1 --keep 1 --resume "$dir/a" --save "$dir/a" 2>&1); code=$?
  chattr -i "$dir/a/step-00000005"
  if [ "$code" -ne 0 ] || ! grep -qE "warning: cannot remove the checkpoint older than the newest 1 \(--keep\) $dir/a/step-00000005: Operation not permitted" <<<"$out"; then
    echo "FAIL: --keep with an unremovable checkpoint (exit $code)"; echo "$out"; fail=1
  else
    echo "ok: $(grep -m1 -oE "warning: cannot remove .*" <<<"$out")"
  fi
  [ "$(cat "$dir/a/latest")" = step-00000008 ] && [ ! -e "$dir/a/step-00000007" ] || { echo "FAIL: latest $(cat "$dir/a/latest"), $(ls "$dir/a")"; fail=1; }
else
  echo "skipped: chattr +i is not available here (not root, or the file system has no immutable flag)"
fi
[ "$fail" -eq 0 ] && echo "ok: a save directory keeps one history"
exit "$fail"
