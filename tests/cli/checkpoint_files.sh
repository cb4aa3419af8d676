#!/usr/bin/env bash
# checkpoint_files.sh DIR ZERO [TRAIN_ARGS...]: a checkpoint whose `latest`, manifest.json or a
# rank file is a FIFO, whose manifest is /dev/zero, whose `latest` leads out of the directory or
# whose rank file is a directory: every command that reads it (train --resume, train --save,
# ckpt inspect, ckpt export, eval, generate) fails at once naming the file and what it is,
# never hangs (each is given 60 s; a hang fails the test) and never reports an internal error.
# TRAIN_ARGS (e.g. --ranks 2, which launches mpirun) are given to the training runs; with
# --ranks, `latest` as a FIFO is also read by the ranks of a job started directly under mpirun.
set -u
dir=$1; zero=$2; shift 2
targs=("$@")
rm -rf "$dir"; mkdir -p "$dir"
small=(--sample 0 --set model.n_embd=16 --set model.n_layer=1 --set train_micro_batch_size_per_gpu=2)
"$zero" train "${small[@]}" "${targs[@]}" --steps 2 --save "$dir/ck" >"$dir/train.txt" 2>&1 || { echo "FAIL: train"; cat "$dir/train.txt"; exit 1; }
step="$dir/ck/step-00000002"
rank=$(cd "$step" && ls rank-00000-of-*.bin)
fail=0
# expect REGEX COMMAND...: the command fails within 60 s with REGEX in its output, no internal error.
expect() {
  local regex=$1; shift
  local out code
  out=$(timeout "${ZERO_HANG_SECONDS:-60}" "$@" 2>&1 </dev/null); code=$?
  if [ "$code" -eq 124 ]; then echo "FAIL (hung): $*"; fail=1; return; fi
  if [ "$code" -eq 0 ] || ! grep -qE -- "$regex" <<<"$out" || grep -q "internal error" <<<"$out"; then
    echo "FAIL (exit $code, wanted /$regex/): $*"; echo "$out" | tail -5; fail=1; return
  fi
  echo "ok: $(basename "$1") ${2:-} ... -> $(grep -oE -- "$regex" <<<"$out" | head -1)"
}
readers() {  # readers REGEX: every reader of $dir/ck
  expect "$1" "$zero" train "${small[@]}" "${targs[@]}" --steps 3 --resume "$dir/ck" --save "$dir/ck"
  expect "$1" "$zero" train "${small[@]}" "${targs[@]}" --steps 3 --resume "$dir/ck"
  expect "$1" "$zero" ckpt inspect "$dir/ck"
  expect "$1" "$zero" ckpt export "$dir/ck" --out "$dir/model.safetensors"
  expect "$1" "$zero" eval --checkpoint "$dir/ck"
  expect "$1" "$zero" generate --checkpoint "$dir/ck" --prompt hi --tokens 2
}
swap() { mv "$1" "$1.kept"; }
put_back() { rm -rf "$1"; mv "$1.kept" "$1"; }

swap "$dir/ck/latest"; mkfifo "$dir/ck/latest"
readers "'latest' file $dir/ck/latest is a FIFO \(named pipe\), not a regular file"
# --save alone reads `latest` too (a fresh run into a directory with checkpoints is refused).
expect "$dir/ck/latest is a FIFO" "$zero" train "${small[@]}" "${targs[@]}" --steps 3 --save "$dir/ck"
case " ${targs[*]} " in *" --ranks "*)  # the ranks of a job started directly under mpirun read it themselves
  expect "$dir/ck/latest is a FIFO" mpirun --allow-run-as-root --oversubscribe -np 2 "$zero" train --comm mpi "${small[@]}" \
    --steps 3 --resume "$dir/ck" --save "$dir/ck";;
esac
put_back "$dir/ck/latest"
for name in "../x" "/etc/passwd" "step-2"; do
  echo "$name" >"$dir/ck/latest"
  expect "$dir/ck/latest holds '$name', not the name of one of" "$zero" train "${small[@]}" "${targs[@]}" --steps 3 --resume "$dir/ck"
done
echo step-00000002 >"$dir/ck/latest"
swap "$step/manifest.json"; mkfifo "$step/manifest.json"
readers "manifest $step/manifest.json is a FIFO \(named pipe\), not a regular file"
rm "$step/manifest.json"; ln -s /dev/zero "$step/manifest.json"
readers "manifest $step/manifest.json is a character device, not a regular file"
put_back "$step/manifest.json"
swap "$step/$rank"; mkfifo "$step/$rank"
readers "rank file $step/$rank is a FIFO \(named pipe\), not a regular file"
rm "$step/$rank"; mkdir "$step/$rank"
readers "rank file $step/$rank is a directory, not a regular file"
put_back "$step/$rank"
# Put back whole: the checkpoint reads again.
"$zero" ckpt inspect "$dir/ck" >"$dir/inspect.txt" 2>&1 || { echo "FAIL: the restored checkpoint"; cat "$dir/inspect.txt"; fail=1; }
[ "$fail" -eq 0 ] && echo "ok: every reader refused every file type at once"
exit "$fail"
