#!/usr/bin/env bash
# slurm.sh DIR ZERO: zero under a real Slurm (Debian's slurmctld, slurmd and munge, installed by
# scripts/setup.sh), a single-node cluster of this machine started in DIR on free ports and stopped
# at the end. (1) `sbatch -n 2` of a job that starts zero with mpirun inside the allocation (Open MPI
# launches its ranks through Slurm): the run is 2 MPI ranks and ends with the weights of the same
# run started by `zero train --ranks 2` outside Slurm. (2) A second job with --save is preempted as
# Slurm preempts, its ranks started by `srun --mpi=pmix` and `scancel --signal=TERM` sent to them once step 3 is printed:
# it stops after a step K with exit 75 and a checkpoint; a third job resumes it to step K+3 and ends
# with the weights of a straight K+3-step run.
set -u
dir=$(realpath -m "$1") zero=$2
for tool in slurmctld slurmd munged sbatch scancel squeue; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing: run scripts/setup.sh (it installs slurmd, slurmctld, slurm-client, munge)"; exit 1; }
done
rm -rf "$dir"; mkdir -p "$dir"/{state,spool,log,munge}
export SLURM_CONF=$dir/slurm.conf
stop() {
  scontrol shutdown >/dev/null 2>&1
  for f in ctld.pid d.pid munge/pid; do [ -f "$dir/$f" ] && kill "$(cat "$dir/$f")" 2>/dev/null; done
  return 0
}
trap stop EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*.out "$dir"/log/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 25 "$f"; }; done; exit 1; }
head -c 1024 /dev/urandom >"$dir/munge/key" && chmod 400 "$dir/munge/key"
munged --key-file="$dir/munge/key" --socket="$dir/munge/sock" --pid-file="$dir/munge/pid" \
  --log-file="$dir/munge/log" --seed-file="$dir/munge/seed" || fail "munged did not start"
read -r ctld_port d_port < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
host=$(hostname -s)
cpus=$(nproc --all); ((cpus >= 2)) || cpus=2  # not `nproc`, which says OMP_NUM_THREADS; two tasks need two CPUs
cat >"$SLURM_CONF" <<CONF
ClusterName=zerotest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/ctld.pid
SlurmdPidFile=$dir/d.pid
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SlurmctldLogFile=$dir/log/ctld.log
SlurmdLogFile=$dir/log/d.log
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
for _ in $(seq 60); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 0.5; done
sinfo -h -o %t | grep -q idle || fail "the node did not come up"

common=(--sample 0 --set steps_per_print=1 --set model.n_embd=32 --set model.n_layer=2 --set train_micro_batch_size_per_gpu=2 --stage 2)
job() {  # job LAUNCHER NAME ARGS...: a 2-task batch job running `LAUNCHER zero train ARGS...`, its output in DIR/NAME.out
  local launcher=$1 name=$2; shift 2
  printf '#!/bin/bash\nexec %s %q train' "$launcher" "$zero" >"$dir/$name.sh"
  printf ' %q' "$@" >>"$dir/$name.sh"
  echo >>"$dir/$name.sh"
  sbatch --parsable -n 2 -c 1 -J "$name" -o "$dir/$name.out" "$dir/$name.sh"
}
finish() {  # finish ID: waits for the job to leave the queue
  for _ in $(seq 240); do [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0; sleep 0.5; done
  fail "job $1 still in the queue after 120 s: $(squeue -h -j "$1" -o '%T %R')"
}
sha() { grep -oE "final weights sha256 [0-9a-f]+" "$1"; }

# (1) a job, against the same run outside Slurm
"$zero" train --ranks 2 "${common[@]}" --steps 4 >"$dir/outside.out" 2>&1 || fail "the run outside Slurm"
id=$(job "mpirun --allow-run-as-root" plain "${common[@]}" --steps 4) || fail "sbatch"
finish "$id"
grep -q "ZeRO stage 2, 2 ranks (mpi)" "$dir/plain.out" || fail "the job was not 2 MPI ranks"
[ -n "$(sha "$dir/plain.out")" ] && [ "$(sha "$dir/plain.out")" = "$(sha "$dir/outside.out")" ] || fail "the job's weights differ from the run outside Slurm"
echo "sbatch -n 2 (mpirun inside the allocation) = zero train --ranks 2: $(sha "$dir/plain.out")"

# (2) preempted as Slurm preempts, then resumed by a job of its own
id=$(job "srun --mpi=pmix" long "${common[@]}" --steps 1000000 --save "$dir/ck") || fail "sbatch"
for _ in $(seq 240); do grep -qE "^step +3/" "$dir/long.out" 2>/dev/null && break; sleep 0.5; done
grep -qE "^step +3/" "$dir/long.out" || fail "the long job never printed step 3 (squeue: $(squeue -h -j "$id" -o '%T %R'))"
scancel --signal=TERM "$id"  # to the job's steps: the ranks that srun started
finish "$id"
k=$(grep -oE "stopped by SIG[A-Z]+ after step [0-9]+" "$dir/long.out" | grep -oE "[0-9]+$" | head -1)
[ -n "$k" ] || fail "the preempted job did not say where it stopped"
id=$(job "srun --mpi=pmix" resumed "${common[@]}" --steps $((k + 3)) --resume "$dir/ck") || fail "sbatch"
"$zero" train --ranks 2 "${common[@]}" --steps $((k + 3)) >"$dir/straight.out" 2>&1 || fail "the straight run"
finish "$id"
grep -q "^resumed from .*at step $k" "$dir/resumed.out" || fail "the third job did not resume at step $k"
[ -n "$(sha "$dir/resumed.out")" ] && [ "$(sha "$dir/resumed.out")" = "$(sha "$dir/straight.out")" ] || fail "the resumed job's weights differ from a straight $((k + 3))-step run"
grep -q "ZeRO stage 2, 2 ranks (mpi)" "$dir/long.out" || fail "the srun job was not 2 MPI ranks"
# The ranks found their layout through PMIx as under mpirun: one host, both ranks on it.
for f in plain long; do
  grep -qE "^layout: 2 ranks \(mpi\) on 1 host, 2 ranks per host, [0-9]+ OpenMP threads? per rank" "$dir/$f.out" || fail "the $f job's layout line is wrong: $(grep -E '^(layout|  host)' "$dir/$f.out")"
done
echo "srun --mpi=pmix job, scancel --signal=TERM after step 3: stopped after step $k with a checkpoint; resumed to step $((k + 3)) = the straight run: $(sha "$dir/resumed.out")"
