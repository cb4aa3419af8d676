#!/usr/bin/env bash
# ckpt_tools.sh DIR ZERO CHECKER [TRAIN_ARGS...]: trains 3 steps on 3 thread ranks at stage 3 (units padded
# unevenly), then: `zero ckpt inspect` verifies every checksum; the fp32 and bf16 safetensors
# exports are read back by the independent Python reader CHECKER and equal the checkpoint's
# parameters; a flipped byte makes inspect fail naming the file. TRAIN_ARGS with bf16 or fp16
# enabled: the checker also requires the saved masters to be fp32 masters, not 16-bit values.
set -u
dir=$1; zero=$2; checker=$3; shift 3
mixed=; case "$*" in *16.enabled=true*) mixed=mixed;; esac
rm -rf "$dir"; mkdir -p "$dir"
"$zero" train --comm threads --ranks 3 --stage 3 --steps 3 --sample 0 --set model.n_embd=32 --set model.n_layer=2 \
  --set train_micro_batch_size_per_gpu=2 --save "$dir/ck" "$@" >"$dir/train.txt" 2>&1 || { echo "FAIL: train"; cat "$dir/train.txt"; exit 1; }
step="$dir/ck/step-00000003"
"$zero" ckpt inspect "$dir/ck" >"$dir/inspect.txt" 2>&1 || { echo "FAIL: inspect"; cat "$dir/inspect.txt"; exit 1; }
grep -q "checksums: verified, all 3 files" "$dir/inspect.txt" && grep -q "^step 3, loss" "$dir/inspect.txt" &&
  grep -q "written by 3 ranks at ZeRO stage 3" "$dir/inspect.txt" || { echo "FAIL: inspect output"; cat "$dir/inspect.txt"; exit 1; }
if [ -n "$mixed" ]; then
  grep -q 'precision {"compute":"[bf]*16","master":"f32"}' "$dir/inspect.txt" || { echo "FAIL: inspect's precision"; cat "$dir/inspect.txt"; exit 1; }
fi
for dtype in fp32 bf16; do
  "$zero" ckpt export "$dir/ck" --out "$dir/model_$dtype.safetensors" --dtype $dtype >"$dir/export_$dtype.txt" 2>&1 ||
    { echo "FAIL: export $dtype"; cat "$dir/export_$dtype.txt"; exit 1; }
  python3 "$checker" "$step" "$dir/model_$dtype.safetensors" $dtype $mixed || { echo "FAIL: $dtype file"; exit 1; }
done
# --out as a file name alone (in the current directory), and --out paths that would destroy
# something (a name not ending in .safetensors is a directory --out): refused with one line,
# every file as it was.
(cd "$dir" && "$zero" ckpt export ck --out relative.safetensors >"$dir/export_relative.txt" 2>&1) &&
  python3 "$checker" "$step" "$dir/relative.safetensors" fp32 $mixed || { echo "FAIL: export to a relative name"; cat "$dir/export_relative.txt"; exit 1; }
ln "$step/rank-00002-of-00003.bin" "$dir/rank_link.safetensors"  # another name of a rank file
before=$(cd "$dir/ck" && sha256sum latest step-*/*)
for bad in "$dir:is a directory that is not empty" "$step/manifest.json:is inside the checkpoint directory $step" \
           "$step/rank-00002-of-00003.bin:is inside the checkpoint directory $step" "/dev/null:exists and is not a directory" \
           "$dir/train.txt:exists and is not a directory" \
           "$dir/rank_link.safetensors:is the same file as a rank file of the checkpoint" \
           "$dir/ck/latest:is inside the checkpoint directory $dir/ck" "$dir/ck/model.safetensors:is inside the checkpoint directory $dir/ck" \
           "$step/model.safetensors:is inside the checkpoint directory $step"; do
  out=$("$zero" ckpt export "$dir/ck" --out "${bad%%:*}" 2>&1) && { echo "FAIL: export to ${bad%%:*} succeeded"; exit 1; }
  grep -q "^zero: \[output\] --out ${bad%%:*} ${bad#*:}" <<<"$out" || { echo "FAIL: export to ${bad%%:*}: $out"; exit 1; }
done
[ "$before" = "$(cd "$dir/ck" && sha256sum latest step-*/*)" ] && [ ! -e "$dir/ck/model.safetensors" ] && [ -c /dev/null ] || { echo "FAIL: a refused export changed a file"; exit 1; }
printf '\x55' | dd of="$step/rank-00001-of-00003.bin" bs=1 seek=100 conv=notrunc status=none
if "$zero" ckpt inspect "$dir/ck" >"$dir/bad.txt" 2>&1; then echo "FAIL: inspect passed a flipped byte"; exit 1; fi
grep -q "rank-00001-of-00003.bin is corrupt" "$dir/bad.txt" || { echo "FAIL: message"; cat "$dir/bad.txt"; exit 1; }
echo "ok: inspect verified, exports equal the checkpoint, corruption named"; cat "$dir/export_fp32.txt"
