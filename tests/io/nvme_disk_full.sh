#!/usr/bin/env bash
# nvme_disk_full.sh ZERO: an nvme_path on a file system too small for the swap files, a 300 KiB
# tmpfs mounted in a mount namespace of this test's own. One rank: refused before the first step
# (the free space against the swap file's size). Two ranks: each fits alone, not both, so one
# rank's writes meet a full disk (ENOSPC) as they fill it. Either way an error naming the folder
# and the reason, a non-zero exit, and no swap folder left behind. Skipped (77) where this user
# cannot make a mount namespace or mount a tmpfs.
set -u
zero=$1
unshare -m true 2>/dev/null || { echo "skipped: cannot make a mount namespace here"; exit 77; }
exec unshare -m bash -c '
  set -u
  zero=$0
  dir=$(mktemp -d)
  mount --make-rprivate / 2>/dev/null || true
  mount -t tmpfs -o size=300k none "$dir" || { echo "skipped: cannot mount a tmpfs here"; exit 77; }
  failed=0
  small=(--comm threads --stage 2 --steps 2 --sample 0 --set model.n_embd=32 --set model.n_layer=2
         --set train_micro_batch_size_per_gpu=2 --set zero_optimization.offload_optimizer.device=nvme
         --set "zero_optimization.offload_optimizer.nvme_path=$dir")
  check() {  # NAME REGEX OUTPUT_FILE EXIT
    if [ "$4" -eq 0 ] || ! grep -Eq "$2" "$3"; then echo "FAIL ($1): exit $4, output:"; cat "$3"; failed=1; fi
    left=$(find "$dir" -mindepth 1 | wc -l)
    if [ "$left" -ne 0 ]; then echo "FAIL ($1): $left files left in $dir:"; find "$dir"; failed=1; fi
  }
  "$zero" train --ranks 1 "${small[@]}" >"$dir.one" 2>&1
  check "one rank" "\[io\] offload nvme_path $dir has .* free but this rank.s swap file needs" "$dir.one" $?
  "$zero" train --ranks 2 "${small[@]}" >"$dir.two" 2>&1
  check "two ranks" "\[io\] (offload nvme_path $dir has .* free|cannot write .* of $dir/zero-swap-.*file system is full)" "$dir.two" $?
  umount "$dir"; rmdir "$dir"; rm -f "$dir.one" "$dir.two"
  [ $failed -eq 0 ] && echo "PASS: a full nvme_path is an error naming it, before or during the writes, and nothing is left"
  exit $failed' "$zero"
