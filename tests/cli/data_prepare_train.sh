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
"$zero" train --data "$work/o/train_000000.bin" --steps 2 --set model.vocab_size=50257 --set model.n_embd=32 \
  --set model.n_layer=2 --set train_micro_batch_size_per_gpu=2 | grep "summary: 2 steps"
