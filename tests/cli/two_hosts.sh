#!/usr/bin/env bash
# two_hosts.sh ZERO: `zero train` across two "hosts" on this machine, and bit-identical weights.
# The hosts are two network namespaces joined by a veth pair (10.201.0.1 and 10.201.0.2); Open
# MPI runs over TCP only, and its launcher reaches the second host through `ip netns exec`
# (tests/cli/netns_rsh.sh as OMPI_MCA_plm_rsh_agent) instead of ssh. The run must place one rank
# on each host, and its final weights' SHA-256 must equal that of the same run on one host.
# Exits 77 (CTest's SKIP_RETURN_CODE) when this machine cannot create network namespaces (not
# root, no iproute2, or no permission in a container): a skip, never a pass. Each namespace has its
# own host name (netns_host.sh, netns_rsh.sh), as Open MPI tells hosts apart by name.
set -u
zero=$1
here=$(cd "$(dirname "$0")" && pwd)
a=zero2h_a_$$ b=zero2h_b_$$
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "not root: creating network namespaces needs root"
command -v ip >/dev/null || skip "no 'ip' command (install iproute2: scripts/setup.sh does)"
cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; rm -rf "$work"; }
work=$(mktemp -d)
trap cleanup EXIT
ip netns add "$a" 2>"$work/err" || skip "ip netns add failed: $(cat "$work/err")"
ip netns add "$b" || skip "ip netns add failed for the second namespace"
set -e
ip link add "v$$a" netns "$a" type veth peer name "v$$b" netns "$b"
ip -n "$a" addr add 10.201.0.1/24 dev "v$$a"
ip -n "$b" addr add 10.201.0.2/24 dev "v$$b"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "v$$a" up
ip -n "$b" link set "v$$b" up
set +e

train=(train --comm mpi --steps 3 --sample 0 --stage 2 --set model.n_embd=32 --set model.n_layer=2
       --set train_micro_batch_size_per_gpu=2)
export OMP_NUM_THREADS=1 OMPI_MCA_mpi_yield_when_idle=1
# One host: two ranks on this machine, as usual.
mpirun --allow-run-as-root --oversubscribe -np 2 "$zero" "${train[@]}" >"$work/one.txt" 2>&1 \
  || { echo "FAIL: the one-host run failed"; cat "$work/one.txt"; exit 1; }
# Two hosts: mpirun in the first namespace, one rank per host, TCP over the veth pair only.
export ZERO_NETNS_HOSTS="10.201.0.1=$a 10.201.0.2=$b"
"$here/netns_host.sh" "$a" env OMPI_MCA_plm_rsh_agent="$here/netns_rsh.sh" \
  mpirun --allow-run-as-root --host 10.201.0.1:1,10.201.0.2:1 -np 2 --display-map \
  --mca btl tcp,self --mca btl_tcp_if_include 10.201.0.0/24 --mca oob_tcp_if_include 10.201.0.0/24 \
  -x OMP_NUM_THREADS -x OMPI_MCA_mpi_yield_when_idle \
  "$zero" "${train[@]}" >"$work/two.txt" 2>&1 \
  || { echo "FAIL: the two-host run failed"; cat "$work/two.txt"; exit 1; }

# zero's own launcher across the same two hosts: --ranks 2 --hostfile, each host checked through
# the launcher agent first, the threads forwarded (-x), the transport chosen by OMPI_MCA_* variables.
printf '10.201.0.1 slots=1\n10.201.0.2 slots=1\n' >"$work/hosts"
"$here/netns_host.sh" "$a" env OMPI_MCA_plm_rsh_agent="$here/netns_rsh.sh" OMPI_MCA_btl=tcp,self \
  OMPI_MCA_btl_tcp_if_include=10.201.0.0/24 OMPI_MCA_oob_tcp_if_include=10.201.0.0/24 \
  "$zero" train --ranks 2 "${train[@]:3}" --hostfile "$work/hosts" >"$work/launched.txt" 2>&1 \
  || { echo "FAIL: zero train --ranks 2 --hostfile failed"; cat "$work/launched.txt"; exit 1; }

sha() { grep -oiE 'sha-?256[^0-9a-f]*[0-9a-f]{64}' "$1" | grep -oE '[0-9a-f]{64}' | tail -1; }
one=$(sha "$work/one.txt") two=$(sha "$work/two.txt")
grep -q "Data for node: 10.201.0.2" "$work/two.txt" || { echo "FAIL: no rank was placed on the second host"; cat "$work/two.txt"; exit 1; }
grep -q "^layout: 2 ranks (mpi) on 2 hosts, 1 rank per host" "$work/two.txt" || { echo "FAIL: the ranks did not find themselves on 2 hosts"; cat "$work/two.txt"; exit 1; }
[ -n "$one" ] || { echo "FAIL: no weights SHA-256 in the one-host output"; cat "$work/one.txt"; exit 1; }
if [ "$one" != "$two" ]; then
  echo "FAIL: the weights differ: one host $one, two hosts ${two:-(none)}"; cat "$work/two.txt"; exit 1
fi
launched=$(sha "$work/launched.txt")
grep -q "^launch: mpirun -np 2 --hostfile $work/hosts" "$work/launched.txt" || { echo "FAIL: no launch line naming the hostfile"; cat "$work/launched.txt"; exit 1; }
grep -q "^layout: 2 ranks (mpi) on 2 hosts, 1 rank per host" "$work/launched.txt" || { echo "FAIL: --hostfile's ranks are not on 2 hosts"; cat "$work/launched.txt"; exit 1; }
[ "$one" = "$launched" ] || { echo "FAIL: --ranks 2 --hostfile gave other weights: ${launched:-(none)}"; cat "$work/launched.txt"; exit 1; }
# ZeRO++ (qwZ, hpZ and qgZ together), and hybrid sharding in groups of 2, with 2 ranks a host:
# every rank's bytes in all and across the two hosts, and the weights, equal those of the same run
# on 4 thread ranks arranged as 2 nodes of 2 (whose bytes tests/engine/ checks against the formulas).
links() { tail -1 "$1" | python3 -c 'import json,sys; print(" ".join("%d:%d/%d" % (r["rank"], sum(r["sent_bytes"].values()), sum(r["sent_across_nodes_bytes"].values())) for r in json.load(sys.stdin)["ranks"]))'; }
across_hosts() {  # across_hosts NAME TRAFFIC-TAG SETTINGS...
  local name=$1 tag=$2; shift 2
  local run=(train --steps 2 --sample 0 --stage 3 --set model.n_embd=32 --set model.n_layer=2 --set train_micro_batch_size_per_gpu=2 "$@")
  "$zero" "${run[@]}" --comm threads --ranks 4 --ranks-per-node 2 --metrics "$work/threads.jsonl" >"$work/t.txt" 2>&1 \
    || { echo "FAIL: $name on thread ranks failed"; cat "$work/t.txt"; exit 1; }
  rm -f "$work/mpi.jsonl"
  "$here/netns_host.sh" "$a" env OMPI_MCA_plm_rsh_agent="$here/netns_rsh.sh" \
    mpirun --allow-run-as-root --host 10.201.0.1:2,10.201.0.2:2 -np 4 \
    --mca btl tcp,self,vader --mca btl_tcp_if_include 10.201.0.0/24 --mca oob_tcp_if_include 10.201.0.0/24 \
    -x OMP_NUM_THREADS -x OMPI_MCA_mpi_yield_when_idle \
    "$zero" "${run[@]}" --comm mpi --metrics "$work/mpi.jsonl" >"$work/m.txt" 2>&1 \
    || { echo "FAIL: $name across two hosts failed"; cat "$work/m.txt"; exit 1; }
  grep -q "^layout: 4 ranks (mpi) on 2 hosts, 2 ranks per host" "$work/m.txt" || { echo "FAIL: $name: not 2 ranks on each of 2 hosts"; cat "$work/m.txt"; exit 1; }
  grep -qF "$tag" "$work/m.txt" || { echo "FAIL: $name: the traffic line does not say '$tag'"; cat "$work/m.txt"; exit 1; }
  local want got
  want=$(links "$work/threads.jsonl") got=$(links "$work/mpi.jsonl")
  [ -n "$want" ] && [ "$want" = "$got" ] || { echo "FAIL: $name: bytes per rank (sent/across) differ: thread ranks $want, two hosts $got"; exit 1; }
  [ "$(sha "$work/t.txt")" = "$(sha "$work/m.txt")" ] || { echo "FAIL: $name: weights differ between thread ranks and two hosts"; exit 1; }
  echo "ok: $name across two hosts, 2 ranks each: bytes per rank (sent/across) $got, as on thread ranks; same weights"
}
across_hosts "ZeRO++ qwZ+hpZ+qgZ" "m=1, qwZ, H=2, qgZ)" --set zero_optimization.zero_quantized_weights=true \
  --set zero_optimization.zero_hpz_partition_size=2 --set zero_optimization.zero_quantized_gradients=true
across_hosts "hybrid sharding G=2" "(N=4, G=2, 2 ranks per node, m=1)" --set zero_optimization.mics_shard_size=2
echo "ok: two hosts (network namespaces $a, $b over TCP) and one host give the same weights: sha256 $one"
