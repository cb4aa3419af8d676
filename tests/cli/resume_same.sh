#!/usr/bin/env bash
# resume_same.sh DIR ZERO TRAIN_ARGS...: trains 6 steps straight, then 3 steps with --save and 3
# more with --resume (each a separate `zero train` with the same TRAIN_ARGS, e.g. --ranks 2
# --stage 3, which under MPI launches mpirun). Passes when the resumed run prints the straight
# run's loss lines for steps 4-6 and the same final weights' SHA-256.
# MODEL_ARGS (environment): the model's arguments instead of the small GPT's (e.g. "--config
# llama_small.json"); RESUME_ARGS: arguments for the resumed run only (another stage, say);
# SAME=losses: compare the printed losses only (a resumed run on another number of ranks sums
# the gradients in another order, so its weights differ in the last bits).
set -u
dir=$1; zero=$2; shift 2
rm -rf "$dir"; mkdir -p "$dir"
read -r -a model <<<"${MODEL_ARGS---set model.n_embd=32 --set model.n_layer=2}"
read -r -a then <<<"${RESUME_ARGS-}"
common=(--sample 0 "${model[@]}" --set steps_per_print=1 --set train_micro_batch_size_per_gpu=2 "$@")
"$zero" train "${common[@]}" --steps 6 >"$dir/straight.txt" 2>&1 || { echo "FAIL: straight run"; cat "$dir/straight.txt"; exit 1; }
"$zero" train "${common[@]}" --steps 3 --save "$dir/ck" >"$dir/first.txt" 2>&1 || { echo "FAIL: first half"; cat "$dir/first.txt"; exit 1; }
"$zero" train "${common[@]}" --steps 6 --resume "$dir/ck" "${then[@]}" >"$dir/second.txt" 2>&1 || { echo "FAIL: resumed run"; cat "$dir/second.txt"; exit 1; }
losses() { grep -oE "^step +[4-6]/6 \| loss [0-9.]+" "$1"; }
sha() { grep -oE "final weights sha256 [0-9a-f]+" "$1"; }
if [ "$(losses "$dir/straight.txt" | wc -l)" -ne 3 ] || [ "$(losses "$dir/straight.txt")" != "$(losses "$dir/second.txt")" ]; then
  echo "FAIL: losses of steps 4-6 differ"; losses "$dir/straight.txt"; echo ---; losses "$dir/second.txt"; exit 1
fi
if [ "${SAME-}" != losses ] && { [ -z "$(sha "$dir/straight.txt")" ] || [ "$(sha "$dir/straight.txt")" != "$(sha "$dir/second.txt")" ]; }; then
  echo "FAIL: final weights differ"; sha "$dir/straight.txt"; sha "$dir/second.txt"; exit 1
fi
grep -q "^resumed from .*at step 3" "$dir/second.txt" || { echo "FAIL: no resume line"; cat "$dir/second.txt"; exit 1; }
echo "ok: resumed run equals the straight run"; losses "$dir/second.txt"; sha "$dir/second.txt"
