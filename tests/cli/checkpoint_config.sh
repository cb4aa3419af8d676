#!/usr/bin/env bash
# checkpoint_config.sh DIR ZERO: the config's train_checkpoints and train_eval sections act by
# themselves, and a flag over them wins and is printed: a config saving every step into DIR/ck
# with --save-every 2 on the command line saves steps 2 and 4 only and says that the flag
# overrode the file (and the same of --eval-every over train_eval.every).
set -u
dir=$1; zero=$2
rm -rf "$dir"; mkdir -p "$dir"
cat >"$dir/config.json" <<JSON
{"train_batch_size": 4, "train_checkpoints": {"save": "$dir/ck", "save_every": 1, "keep": 0},
 "train_eval": {"every": 1, "batches": 1}}
JSON
"$zero" train --comm threads --ranks 2 --config "$dir/config.json" --steps 4 --sample 0 --set model.n_embd=16 --set model.n_layer=1 \
  --save-every 2 --eval-every 2 >"$dir/out.txt" 2>&1 || { echo "FAIL: train"; cat "$dir/out.txt"; exit 1; }
grep -q "^config: --save-every 2 overrides train_checkpoints.save_every = 1$" "$dir/out.txt" ||
  { echo "FAIL: the override was not printed"; cat "$dir/out.txt"; exit 1; }
grep -q "^config: --eval-every 2 overrides train_eval.every = 1$" "$dir/out.txt" ||
  { echo "FAIL: the eval override was not printed"; cat "$dir/out.txt"; exit 1; }
[ "$(grep -cE "^step +[0-9]+/4 \| validation loss" "$dir/out.txt")" -eq 2 ] ||
  { echo "FAIL: --eval-every 2 did not evaluate at steps 2 and 4 only"; cat "$dir/out.txt"; exit 1; }
got=$(cd "$dir/ck" && ls -d step-* | tr '\n' ' ')
[ "$got" = "step-00000002 step-00000004 " ] || { echo "FAIL: saved '$got', expected steps 2 and 4"; exit 1; }
"$zero" train --comm threads --ranks 2 --config "$dir/config.json" --steps 5 --sample 0 --set model.n_embd=16 --set model.n_layer=1 \
  --resume "$dir/ck" >"$dir/resumed.txt" 2>&1 || { echo "FAIL: resume"; cat "$dir/resumed.txt"; exit 1; }
grep -q "^resumed from $dir/ck/step-00000004 at step 4" "$dir/resumed.txt" || { echo "FAIL: no resume"; cat "$dir/resumed.txt"; exit 1; }
echo "ok: train_checkpoints saved, the flag overrode it and said so, and the resume continued from it"
