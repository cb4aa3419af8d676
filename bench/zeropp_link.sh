#!/usr/bin/env bash
# Stage 3 across a throttled link: two "hosts" (network namespaces joined by a veth pair, TCP
# only, as tests/cli/two_hosts.sh makes them) with `tc` rate-limiting each end of the link to
# RATE, 2 ranks per host; the same GPT trained with each variant below, one after another, ROUNDS
# times alternated. Prints each variant's tokens/s (median of the rounds; each run's own
# summary, the median step), rank 0's bytes across hosts in the last step, and both as ratios to
# plain stage 3. Needs root and iproute2.
# In bf16 by default (DTYPE=fp32 for f32 on the wire), as ZeRO++ states its volumes in 16-bit terms.
#   RATE=1gbit bash bench/zeropp_link.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
rate=${RATE:-1gbit}
here=$(cd "$(dirname "$0")/.." && pwd)
zero=$build/zero
[ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && command -v tc >/dev/null || { echo "needs root, ip and tc (iproute2)"; exit 2; }
# name|settings (each a --set of the same stage-3 run)
variants=(
  "stage 3|"
  "hybrid G=2|--set zero_optimization.mics_shard_size=2"
  "ZeRO++ qwZ|--set zero_optimization.zero_quantized_weights=true"
  "ZeRO++ hpZ|--set zero_optimization.zero_hpz_partition_size=2"
  "ZeRO++ qgZ|--set zero_optimization.zero_quantized_gradients=true"
  "ZeRO++ qwZ+hpZ+qgZ|--set zero_optimization.zero_quantized_weights=true --set zero_optimization.zero_hpz_partition_size=2 --set zero_optimization.zero_quantized_gradients=true"
)
[ -n "${EXTRA_VARIANT:-}" ] && variants+=("$EXTRA_VARIANT")
model=(--set model.n_embd=${N_EMBD:-128} --set model.n_layer=${N_LAYER:-4} --set model.n_ctx=64 --set train_micro_batch_size_per_gpu=4)
work=$(mktemp -d)
a=zpl_a_$$ b=zpl_b_$$
cleanup() { ip netns del "$a" 2>/dev/null || true; ip netns del "$b" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
ip netns add "$a"; ip netns add "$b"
ip link add "z$$a" netns "$a" type veth peer name "z$$b" netns "$b"
ip -n "$a" addr add 10.203.0.1/24 dev "z$$a"; ip -n "$b" addr add 10.203.0.2/24 dev "z$$b"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "z$$a" up; ip -n "$b" link set "z$$b" up
ip netns exec "$a" tc qdisc add dev "z$$a" root tbf rate "$rate" burst 256kb latency 50ms
ip netns exec "$b" tc qdisc add dev "z$$b" root tbf rate "$rate" burst 256kb latency 50ms
export OMP_NUM_THREADS=1 OMPI_MCA_mpi_yield_when_idle=1 ZERO_NETNS_HOSTS="10.203.0.1=$a 10.203.0.2=$b"
run() {  # run SETTINGS...: one training run across the two hosts, 2 ranks each
  "$here/tests/cli/netns_host.sh" "$a" env OMPI_MCA_plm_rsh_agent="$here/tests/cli/netns_rsh.sh" \
    mpirun --allow-run-as-root --oversubscribe --host 10.203.0.1:2,10.203.0.2:2 -np 4 \
    --mca btl tcp,self,vader --mca btl_tcp_if_include 10.203.0.0/24 --mca oob_tcp_if_include 10.203.0.0/24 \
    -x OMP_NUM_THREADS -x OMPI_MCA_mpi_yield_when_idle \
    "$zero" train --comm mpi --stage 3 --dtype "${DTYPE:-bf16}" --steps ${STEPS:-6} --sample 0 "${model[@]}" "$@"
}
: >"$work/rows"
for r in $(seq "$rounds"); do
  for v in "${variants[@]}"; do
    name=${v%%|*}; read -r -a sets <<<"${v#*|}"
    out=$(run "${sets[@]}" 2>&1) || { echo "FAIL: $name"; echo "$out" | tail -20; exit 1; }
    tps=$(echo "$out" | sed -n 's/^summary: .*, \([0-9.]*\) tokens\/s.*/\1/p')
    across=$(echo "$out" | sed -n 's/^traffic of rank 0 in the last step.*sent [^(]*(\([^)]*\)).*/\1/p' | sed -n 's/.*, \([0-9.]* [KMG]*i*B\) across nodes.*/\1/p')
    echo "$name|$tps|$across" >>"$work/rows"
  done
done
echo "== stage 3 across 2 hosts x 2 ranks, link $rate each way, $rounds rounds (median tokens/s; rank 0's across-host bytes in the last step)"
python3 - "$work/rows" <<'PY'
import collections, re, statistics, sys
tps, across = collections.defaultdict(list), {}
units = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
for line in open(sys.argv[1]):
    name, t, a = line.rstrip("\n").split("|")
    tps[name].append(float(t))
    num, unit = a.split()
    across[name] = float(num) * units[unit]
base = statistics.median(tps["stage 3"]); base_a = across["stage 3"]
print(f"{'variant':<28} {'tokens/s':>10} {'x stage 3':>10} {'across/step':>14} {'x stage 3':>10}")
for name in tps:
    t = statistics.median(tps[name])
    print(f"{name:<28} {t:>10.0f} {t / base:>10.2f} {across[name] / 1024:>11.1f} KiB {across[name] / base_a:>10.3f}")
PY
