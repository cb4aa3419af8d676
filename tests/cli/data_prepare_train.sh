#!/usr/bin/env bash
# zero train reads a shard zero data prepare wrote (GPT-2 BPE, vocabulary 50257 in its header).
#   data_prepare_train.sh ZERO GPT2_ENCODER_JSON
set -euo pipefail
zero=$1 encoder=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{ gzip -dc /usr/share/doc/jargon-text/jargon.txt.gz || true; } | head -c 100000 > "$work/a.txt"
out=$("$zero" data prepare "$work/a.txt" --out "$work/o" --tokenizer "$encoder" --threads 2)
echo "$out"
count=$(echo "$out" | sed -n 's/^train: \([0-9]*\) tokens in 1 shards.*/\1/p')
header=$(od -An -t d4 -j 8 -N 4 "$work/o/train_000000.bin" | tr -d ' ')
[ -n "$count" ] && [ "$count" = "$header" ] || { echo "prepare said $count tokens, the header $header"; exit 1; }
"$zero" train --data "$work/o/train_000000.bin" --steps 2 --eval-batches 2 --set model.vocab_size=50257 --set model.n_embd=32 \
  --set model.n_layer=2 --set train_micro_batch_size_per_gpu=2 | grep "summary: 2 steps"
# Several shards and a validation set, read as patterns with the tokenizer that made them (recorded in
# the checkpoint): zero eval of the run's checkpoint over the val pattern prints its validation loss,
# over the windows the run evaluated (--eval-batches 4: 8 windows, recorded in the checkpoint; the
# evaluations at V=50257 cost seconds each, and the test asks for the same loss, not many windows).
"$zero" data prepare "$work/a.txt" --out "$work/p" --tokenizer "$encoder" --shard-tokens 5000 --val-file /usr/share/common-licenses/GPL-3 >/dev/null
[ "$(ls "$work/p" | grep -c '^train_')" -gt 2 ] || { echo "expected several train shards"; ls "$work/p"; exit 1; }
run=$("$zero" train --data "$work/p/train_*.bin" --val-data "$work/p/val_*.bin" --tokenizer "$encoder" --steps 2 --eval-every 2 \
  --eval-batches 4 --sample 0 --set model.vocab_size=50257 --set model.n_embd=32 --set model.n_layer=2 --set train_micro_batch_size_per_gpu=2 --save "$work/ck")
final=$(grep -oE 'validation loss [0-9.]+ -> [0-9.]+' <<<"$run" | grep -oE '[0-9.]+$')
got=$("$zero" eval --checkpoint "$work/ck" --split val)
grep -q "^loss $final on $work/p/val_\*.bin (val, 8 windows of 64 tokens)" <<<"$got" || { echo "eval printed: $got (want loss $final)"; exit 1; }
echo "shards read as patterns with their tokenizer; eval: $got"
# Tokens of another vocabulary than the tokenizer's: refused, naming both.
printf 'x' | "$zero" data prepare "$work/a.txt" --out "$work/b" --shard-tokens 100000 >/dev/null
if msg=$("$zero" train --data "$work/b/train_000000.bin" --tokenizer "$encoder" --steps 1 --sample 0 2>&1); then echo "ran with another vocabulary"; exit 1; fi
grep -q "holds tokens of a vocabulary of 256 .* has 50257: the file was made with another tokenizer" <<<"$msg" || { echo "$msg"; exit 1; }
echo "another vocabulary refused"
