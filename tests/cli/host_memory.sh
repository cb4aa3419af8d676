#!/usr/bin/env bash
# host_memory.sh ZERO MPIRUN...: a run that the host's memory cannot hold is refused before its
# first allocation, with exit 1, the bytes needed and available (exact), where the available
# figure comes from (MemAvailable or a cgroup limit) and what would fit: in the launching process
# before mpirun starts, and in every rank of a job that mpirun started directly. The host is a
# fake root (ZERO_HOST_ROOT: its proc/meminfo, proc/self/cgroup and sys/fs/cgroup) so that the
# test holds on a machine of any size.
set -u
zero=$1
shift
mpirun=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
small=(--steps 1 --sample 0)
failed=0

# host NAME MEMAVAILABLE_KIB [CGROUP_MAX CGROUP_CURRENT CGROUP_INACTIVE_FILE]: a fake root.
host() {
  local root=$dir/$1
  mkdir -p "$root/proc/self"
  printf 'MemTotal:       999999999 kB\nMemFree:          1000 kB\nMemAvailable:   %s kB\n' "$2" >"$root/proc/meminfo"
  echo "0::/job" >"$root/proc/self/cgroup"
  if [ $# -gt 2 ]; then
    mkdir -p "$root/sys/fs/cgroup/job"
    echo "$3" >"$root/sys/fs/cgroup/job/memory.max"
    echo "$4" >"$root/sys/fs/cgroup/job/memory.current"
    printf 'anon 1\ninactive_file %s\n' "$5" >"$root/sys/fs/cgroup/job/memory.stat"
  fi
  echo "$root"
}

# refuse ROOT REGEX COMMAND...: exit 1, output matching REGEX, and no training step started.
refuse() {
  local root=$1 regex=$2
  shift 2
  local out code
  out=$(ZERO_HOST_ROOT=$root timeout 120 "$@" 2>&1)
  code=$?
  if [ "$code" -ne 1 ] || ! grep -qzE -- "$regex" <<<"$out" || grep -q "^step " <<<"$out"; then
    echo "FAIL (exit $code): ZERO_HOST_ROOT=$root $*"
    echo "expected: $regex"
    echo "$out"
    failed=1
  fi
}

tiny=$(host tiny 204800)  # 200 MiB: less than the built-in model's rank needs with the margin
refuse "$tiny" "^zero: \[train\] this run needs [0-9,]+ bytes \([0-9.]+ MiB\) of host memory, but this host has 209,715,200 bytes \(200.00 MiB\) available \(MemAvailable in $tiny/proc/meminfo; no memory cgroup of this process sets a lower limit\)\. Needed: 1 rank on this host x \([0-9.]+ MiB planned per rank at stage 1, micro-batch 8: device tier [0-9.]+ MiB, host memory on the cpu device, \+ host tier [0-9.]+ (B|KiB); \+ [0-9.]+ MiB margin: 256.00 MiB for the process and 10% for what the plan leaves out\) \+ [0-9.]+ MiB of data\. Nothing was allocated\. No stage, offload, micro-batch or activation checkpointing makes it fit on this host" \
  "$zero" train "${small[@]}"

# The cgroup binds first: 300 MiB limit, 200 MiB used of which 50 MiB inactive file cache -> 150 MiB.
boxed=$(host boxed 104857600 314572800 209715200 52428800)
refuse "$boxed" "this host has 157,286,400 bytes \(150.00 MiB\) available \(the cgroup limit $boxed/sys/fs/cgroup/job/memory.max \(314572800 bytes\) less what the cgroup uses \(157286400 bytes, its inactive file cache not counted\), which is less than the host's MemAvailable in $boxed/proc/meminfo \(107374182400 bytes\)\)" \
  "$zero" train "${small[@]}"

# Issue 21's run: --micro-batch 5000 on the built-in model (15.60 GiB planned) on a 16 GiB host.
# (One line of regex: grep reads a pattern's lines as alternatives; under -z, . matches newlines.)
sixteen=$(host sixteen 16777216)
refuse "$sixteen" "but this host has 17,179,869,184 bytes \(16.00 GiB\) available .*15.60 GiB planned per rank at stage 1, micro-batch 5000: device tier 15.60 GiB.*What would fit:.  micro-batch 2500 with gradient_accumulation_steps 2 \(the same global batch\) fits at stage 1: it needs [0-9.]+ GiB; the largest micro-batch that fits is [0-9]+.  --activation-checkpointing \(each block's forward runs again in backward\) fits at stage 1" \
  "$zero" train "${small[@]}" --micro-batch 5000

# Two ranks need twice as much: checked in the launching process, before mpirun (no banner), and
# with thread ranks; stage 3 shards the model over the two.
eight=$(host eight 8388608)
refuse "$eight" "^zero: \[train\] this run needs .* but this host has 8,589,934,592 bytes \(8.00 GiB\) available .*Needed: 2 ranks on this host x \(4.69 GiB planned per rank at stage 1, micro-batch 1500" \
  "$zero" train "${small[@]}" --ranks 2 --micro-batch 1500
refuse "$eight" "Needed: 2 ranks on this host x" "$zero" train "${small[@]}" --comm threads --ranks 2 --micro-batch 1500
# A job started by mpirun itself: every rank checks (the ranks on this host, from mpirun) and none trains.
refuse "$eight" "zero: \[train\] this run needs .*Needed: 2 ranks on this host x \(4.69 GiB planned per rank" \
  "${mpirun[@]}" -np 2 -x ZERO_HOST_ROOT "$zero" train "${small[@]}" --micro-batch 1500

# A host with room trains as before.
roomy=$(host roomy 67108864)
out=$(ZERO_HOST_ROOT=$roomy "$zero" train "${small[@]}" 2>&1) || { echo "FAIL: a run that fits was refused"; echo "$out"; failed=1; }
exit $failed
