#!/usr/bin/env bash
# eval_matches_training.sh DIR ZERO: trains 4 steps on 2 MPI-or-thread ranks (the args after
# ZERO) with --save; `zero eval --split val` on the checkpoint prints the validation loss the
# run printed at its last step, and `zero generate` continues a prompt from the same checkpoint;
# a file shorter than one window, or with tokens outside its vocabulary, is refused by name.
# MODEL_ARGS and SEQ_LEN (environment): another model (e.g. "--config llama_small.json", 16) than
# the small GPT (T = 64). The exported Hugging Face directory generates the checkpoint's text.
set -u
dir=$1; zero=$2; shift 2
rm -rf "$dir"; mkdir -p "$dir"
read -r -a model <<<"${MODEL_ARGS---set model.n_embd=32 --set model.n_layer=2}"
T=${SEQ_LEN-64}
"$zero" train "$@" --steps 4 --sample 0 "${model[@]}" --set train_micro_batch_size_per_gpu=4 \
  --save "$dir/ck" >"$dir/train.txt" 2>&1 || { echo "FAIL: train"; cat "$dir/train.txt"; exit 1; }
want=$(grep -oE "validation loss [0-9.]+ -> [0-9.]+" "$dir/train.txt" | grep -oE "[0-9.]+$")
got=$("$zero" eval --checkpoint "$dir/ck" --split val 2>&1) || { echo "FAIL: eval"; echo "$got"; exit 1; }
[ -n "$want" ] && grep -q "^loss $want on .*(val, " <<<"$got" || { echo "FAIL: training printed $want, eval: $got"; exit 1; }
gen=$("$zero" generate --checkpoint "$dir/ck" --prompt "hello " --tokens 40 --temperature 0.7 --top-k 5 2>&1) ||
  { echo "FAIL: generate"; echo "$gen"; exit 1; }
grep -q "^hello " <<<"$gen" && grep -q "zero generate: 40 tokens in" <<<"$gen" || { echo "FAIL: generate output: $gen"; exit 1; }
# The same weights as a Hugging Face directory continue the prompt with the same text.
"$zero" ckpt export "$dir/ck" --out "$dir/hf" >"$dir/export.txt" 2>&1 || { echo "FAIL: export"; cat "$dir/export.txt"; exit 1; }
hf=$("$zero" generate --init-from "$dir/hf" --prompt "hello " --tokens 40 --temperature 0.7 --top-k 5 2>/dev/null) ||
  { echo "FAIL: generate --init-from"; exit 1; }
ck=$("$zero" generate --checkpoint "$dir/ck" --prompt "hello " --tokens 40 --temperature 0.7 --top-k 5 2>/dev/null)
[ -n "$hf" ] && [ "$hf" = "$ck" ] || { echo "FAIL: generate from the exported directory differs: $hf / $ck"; exit 1; }
# Data the checkpoint cannot evaluate: shorter than one window, or tokens outside its vocabulary.
head -c $((T - 14)) /usr/share/common-licenses/GPL-3 >"$dir/short.txt"
python3 -c "import struct, sys; n = 300; sys.stdout.buffer.write(struct.pack('<256i', 20240520, 1, n, *[0] * 253) + struct.pack('<%dH' % n, *[i * 7 for i in range(n)]))" >"$dir/wide.bin"
for bad in "short.txt:has $((T - 14)) tokens, fewer than one window of the checkpoint's seq_len $T \\($((T + 1)) tokens" \
           "wide.bin:holds token 2093, outside the checkpoint's vocabulary of 256"; do
  out=$("$zero" eval --checkpoint "$dir/ck" --data "$dir/${bad%%:*}" 2>&1) && { echo "FAIL: eval of ${bad%%:*} succeeded: $out"; exit 1; }
  grep -qE "^zero: \[cli\] $dir/${bad%%:*} ${bad#*:}" <<<"$out" || { echo "FAIL: eval of ${bad%%:*}: $out"; exit 1; }
done
echo "ok: eval $got (training: $want)"
