#!/usr/bin/env bash
# checkpoint_bench.sh [DIR]: save and load of the ~50M bench GPT (V=256 T=256 C=768 L=7) on 2 MPI
# ranks, beside the disk's own write speed measured with dd in the same folder.
#  - two steps with --save-every 1: the training stall of each background save, and each save's
#    write time and throughput (the slowest rank's write; both ranks write at once);
#  - dd of one rank file's size with fdatasync: the disk's sequential write speed;
#  - a resumed run: each rank's read time (from the page cache unless it was dropped).
set -u
zero=${ZERO:-build/zero}
dir=${1:-/tmp/zero_ckpt_bench}
rm -rf "$dir"; mkdir -p "$dir"
model=(--set model.n_embd=768 --set model.n_layer=7 --set model.n_head=12 --set model.n_ctx=256
       --set train_micro_batch_size_per_gpu=1 --sample 0)
"$zero" train --ranks 2 --steps 2 --save-every 1 --save "$dir/ck" "${model[@]}" 2>&1 | grep -E "^zero train|checkpoint"
bytes=$(stat -c %s "$dir/ck/step-00000002/rank-00000-of-00002.bin")
echo "dd, one rank file's size ($((bytes / 1048576)) MiB), fdatasync:"
dd if=/dev/zero of="$dir/dd.bin" bs=1M count=$((bytes / 1048576)) conv=fdatasync 2>&1 | tail -1
rm -f "$dir/dd.bin"
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null && echo "(page cache dropped before the load)"
"$zero" train --ranks 2 --steps 3 --resume "$dir/ck" "${model[@]}" 2>&1 | grep -E "^resumed"
rm -rf "$dir"
