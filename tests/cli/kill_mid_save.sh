#!/usr/bin/env bash
# kill_mid_save.sh DIR ZERO POINT: a 2-rank run saving every 3 steps is killed with SIGKILL at
# POINT of its step-6 save (rank-file: halfway through rank 0's file; before-latest: manifest
# written, `latest` not yet). Passes when `latest` still names step 3, step 3's checkpoint
# loads, and resuming from the directory continues from step 3 to the straight run's weights.
set -u
dir=$1; zero=$2; point=$3
rm -rf "$dir"; mkdir -p "$dir"
common=(--comm threads --ranks 2 --sample 0 --set model.n_embd=32 --set model.n_layer=2 --set train_micro_batch_size_per_gpu=2 --stage 2)
"$zero" train "${common[@]}" --steps 8 >"$dir/straight.txt" 2>&1 || { echo "FAIL: straight run"; cat "$dir/straight.txt"; exit 1; }
ZERO_CHECKPOINT_TEST_KILL="$point:6" "$zero" train "${common[@]}" --steps 8 --save-every 3 --save "$dir/ck" >"$dir/killed.txt" 2>&1
code=$?
[ "$code" -eq 137 ] || { echo "FAIL: expected death by SIGKILL (137), got $code"; cat "$dir/killed.txt"; exit 1; }
[ "$(cat "$dir/ck/latest")" = "step-00000003" ] || { echo "FAIL: latest is '$(cat "$dir/ck/latest")'"; exit 1; }
"$zero" train "${common[@]}" --steps 8 --resume "$dir/ck" --save "$dir/ck" >"$dir/resumed.txt" 2>&1 ||
  { echo "FAIL: resume"; cat "$dir/resumed.txt"; exit 1; }
grep -q "^resumed from $dir/ck/step-00000003 at step 3" "$dir/resumed.txt" || { echo "FAIL: did not resume from step 3"; cat "$dir/resumed.txt"; exit 1; }
sha() { grep -oE "final weights sha256 [0-9a-f]+" "$1"; }
[ -n "$(sha "$dir/straight.txt")" ] && [ "$(sha "$dir/straight.txt")" = "$(sha "$dir/resumed.txt")" ] ||
  { echo "FAIL: weights differ from the straight run"; sha "$dir/straight.txt"; sha "$dir/resumed.txt"; exit 1; }
[ "$(cat "$dir/ck/latest")" = "step-00000008" ] || { echo "FAIL: latest after the resumed run is '$(cat "$dir/ck/latest")'"; exit 1; }
echo "ok: killed at $point of step 6; latest stayed step 3; resumed to the straight run's weights"
