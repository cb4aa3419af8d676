#!/usr/bin/env bash
# nvme_host_memory.sh ZERO: a host-memory cap (--host-memory) too small for host offload of the
# optimizer state (refused before the first step) trains with the NVMe tier inside the cap, and
# its weights are no offload's (uncapped), bit for bit; the swap folder is empty afterwards.
set -u
zero=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
small=(--comm threads --ranks 2 --stage 2 --steps 3 --sample 0 --set model.n_embd=32 --set model.n_layer=2
       --set train_micro_batch_size_per_gpu=2)
nvme=(--set zero_optimization.offload_optimizer.device=nvme --set "zero_optimization.offload_optimizer.nvme_path=$dir"
      --set zero_optimization.sub_group_size=2000)
cap=(--host-memory 450KiB)  # 225 KiB a rank: host offload needs 279 KiB, the NVMe tier 164 KiB and the final copy 50 KiB
failed=0
sha() { sed -n 's/.*final weights sha256 \([0-9a-f]*\).*/\1/p' "$1"; }

"$zero" train "${small[@]}" --offload optimizer "${cap[@]}" >"$dir/host.out" 2>&1
if [ $? -eq 0 ] || ! grep -q "\[offload\] the offloaded state needs 279.00 KiB of host memory per rank" "$dir/host.out"; then
  echo "FAIL: host offload under the cap was not refused:"; cat "$dir/host.out"; failed=1
fi
if ! "$zero" train "${small[@]}" "${nvme[@]}" "${cap[@]}" >"$dir/nvme.out" 2>&1; then
  echo "FAIL: the NVMe tier under the cap did not train:"; cat "$dir/nvme.out"; failed=1
fi
"$zero" train "${small[@]}" >"$dir/plain.out" 2>&1 || { echo "FAIL: the run without offload failed"; cat "$dir/plain.out"; failed=1; }
a=$(sha "$dir/nvme.out") b=$(sha "$dir/plain.out")
if [ -z "$a" ] || [ "$a" != "$b" ]; then echo "FAIL: NVMe weights $a, without offload $b"; failed=1; fi
left=$(find "$dir" -name 'zero-swap-*' | wc -l)
if [ "$left" -ne 0 ]; then echo "FAIL: $left swap folders left in $dir"; failed=1; fi
[ $failed -eq 0 ] && echo "PASS: the NVMe tier trains in 450 KiB where host offload is refused; weights $a = no offload's"
exit $failed
