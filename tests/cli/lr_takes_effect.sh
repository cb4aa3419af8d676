#!/usr/bin/env bash
# lr_takes_effect.sh DIR ZERO: --lr must change the training with the built-in setup (whose
# WarmupLR once warmed up to its own warmup_max_lr, so --lr 0.001, 0.01 and 1 gave the same
# weights). Passes when three learning rates give three different final weights and --lr 2e-3,
# the built-in rate, gives the weights of the run without --lr; the learning rate printed at the
# last step is the one asked for.
set -u
dir=$1; zero=$2
rm -rf "$dir"; mkdir -p "$dir"
common=(train --comm threads --ranks 1 --sample 0 --steps 25 --set steps_per_print=25 --set model.n_embd=32 --set model.n_layer=1
        --set train_micro_batch_size_per_gpu=1)
run() {  # run NAME [FLAGS...]: the final weights' SHA-256 line
  local name=$1; shift
  "$zero" "${common[@]}" "$@" >"$dir/$name.txt" 2>&1 || { echo "FAIL: run $name"; cat "$dir/$name.txt"; exit 1; }
  grep -oE "final weights sha256 [0-9a-f]+" "$dir/$name.txt"
}
none=$(run none); a=$(run a --lr 0.001); b=$(run b --lr 0.01); c=$(run c --lr 1); d=$(run d --lr 2e-3)
[ -n "$none" ] || { echo "FAIL: no sha line"; cat "$dir/none.txt"; exit 1; }
if [ "$a" = "$b" ] || [ "$b" = "$c" ] || [ "$a" = "$c" ]; then echo "FAIL: --lr changed nothing: $a / $b / $c"; exit 1; fi
[ "$d" = "$none" ] || { echo "FAIL: --lr 2e-3 (the built-in rate) differs from no --lr: $d vs $none"; exit 1; }
grep -qE "^step +25/25 .*\| lr 1\.00e-02 " "$dir/b.txt" || { echo "FAIL: step 25 does not print lr 1.00e-02"; cat "$dir/b.txt"; exit 1; }
echo "ok: --lr takes effect ($a, $b, $c)"
