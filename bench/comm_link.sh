#!/usr/bin/env bash
# zero's all-reduce bandwidth beside MPI_Allreduce's on the same link: `zero bench comm --reference`
# times, per size and determinism mode, 5 rounds of zero's calls each followed by a round of the
# plain blocking MPI_Allreduce (an OSU-style loop with nothing of zero's in between) in the same
# processes, and takes the ratio round by round; this runs it ROUNDS times on 2 ranks on one host
# (Open MPI's shared memory) and on 2 "hosts" (network namespaces joined by a veth pair, TCP only,
# as tests/cli/two_hosts.sh makes them, each on a core of its own; add RATE=1gbit to throttle the
# link with tc), and prints
# each size's medians over the launches. Needs root and iproute2 for the two-host part. MPI_ARGS
# adds mpirun options to every launch, e.g. UCX instead of Open MPI's ob1:
#   MPI_ARGS='--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any' bash bench/comm_link.sh
#   bash bench/comm_link.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
zero=$build/zero
[ -x "$zero" ] || { echo "build zero first: bash scripts/build.sh zero_cli"; exit 2; }
sizes=(65536 1048576 4194304 16777216 67108864)
csv=$(IFS=,; echo "${sizes[*]}")
work=$(mktemp -d)
a=zerocl_a_$$ b=zerocl_b_$$
cleanup() { ip netns del "$a" 2>/dev/null || true; ip netns del "$b" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
export OMP_NUM_THREADS=1 OMPI_MCA_mpi_yield_when_idle=1

read -r -a extra <<<"${MPI_ARGS:-}"
one_host() { mpirun --allow-run-as-root -np 2 "${extra[@]}" "$@"; }
# Each "host" on a core of its own (ZERO_NETNS_CPUS; Open MPI's binding off, or it would bind
# each host's rank to core 0: both ranks on one core, the other idle, as no two hosts are).
export ZERO_NETNS_CPUS="$a=0 $b=$(( $(nproc) > 1 ? 1 : 0 ))"
two_hosts() {
  "$here/tests/cli/netns_host.sh" "$a" env OMPI_MCA_plm_rsh_agent="$here/tests/cli/netns_rsh.sh" ZERO_NETNS_HOSTS="10.201.0.1=$a 10.201.0.2=$b" \
    mpirun --allow-run-as-root --host 10.201.0.1:1,10.201.0.2:1 -np 2 --bind-to none "${extra[@]}" --mca btl tcp,self \
    --mca btl_tcp_if_include 10.201.0.0/24 --mca oob_tcp_if_include 10.201.0.0/24 -x OMP_NUM_THREADS "$@"
}

# run LAUNCHER: ROUNDS launches of zero bench comm --reference; rows "bytes mode zero_busbw mpi_busbw ratio"
measure() {
  local launcher=$1; : >"$work/rows"
  for r in $(seq "$rounds"); do
    $launcher "$zero" bench comm --comm mpi --sizes "$csv" --iters 10 --reference | awk '$1 ~ /^[0-9]+$/ {print $1, $2, $5, $6, $7}' >>"$work/rows"
  done
  python3 - "$work/rows" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    b, mode, zero, mpi, ratio = line.split(); rows[(int(b), mode)].append((float(zero), float(mpi), float(ratio)))
print(f"{'bytes':>10} {'mode':>14} {'zero busbw':>11} {'MPI busbw':>10} {'ratio':>6}   (GB/s; medians over the launches; ratio: of each launch's round-by-round ratios)")
for (b, mode), r in sorted(rows.items()):
    med = [statistics.median(x[i] for x in r) for i in range(3)]
    print(f"{b:>10} {mode:>14} {med[0]:>11.3f} {med[1]:>10.3f} {med[2]:>6.2f}   ratios {' '.join(f'{x[2]:.2f}' for x in r)}")
PY
}

echo "== one host, 2 ranks (shared memory), $rounds rounds"
measure one_host
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && ip netns add "$a" 2>/dev/null; then
  ip netns add "$b"
  ip link add "c$$a" netns "$a" type veth peer name "c$$b" netns "$b"
  ip -n "$a" addr add 10.201.0.1/24 dev "c$$a"; ip -n "$b" addr add 10.201.0.2/24 dev "c$$b"
  for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
  ip -n "$a" link set "c$$a" up; ip -n "$b" link set "c$$b" up
  if [ -n "${RATE:-}" ]; then
    for ns in "$a" "$b"; do ip netns exec "$ns" tc qdisc add dev "c$$([ "$ns" = "$a" ] && echo a || echo b)" root tbf rate "$RATE" burst 256kb latency 50ms; done
  fi
  echo "== two hosts (network namespaces, TCP over a veth pair${RATE:+, $RATE}), 1 rank each, $rounds rounds"
  measure two_hosts
else
  echo "(two hosts skipped: needs root, iproute2 and network namespaces)"
fi
