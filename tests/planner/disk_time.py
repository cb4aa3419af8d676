#!/usr/bin/env python3
"""disk_time.py ZERO: the step-time model's disk term (planner/step_time.h, docs/estimate.md "The
disk"), recomputed here from the same JSON's bytes and the bandwidths given, by the overlap rule
the docs state, not by zero's code:
  - the optimizer on NVMe (stage 1, two ranks on one node sharing its disk): the swap file's bytes
    are 12 a shard element (fp32 master, m, v), read and written once; disk = bytes x ranks per
    node / bandwidth, reads and writes one after the other; the sub-groups are the unit slices cut
    to sub_group_size; at the step the pipeline takes max(disk, CPU) + min(disk, CPU) / S, CPU being
    Adam (28 bytes an element at the node's memory bandwidth) and the copy up the link; exposed =
    that - CPU. Disk-bound and CPU-bound, both.
  - the parameters on NVMe (stage 3, host Adam): their reads run ahead under forward and backward
    (exposed: what outlasts them), or with buffer_count 1 all exposed; their writes wait after Adam.
  - every row: step = compute + tensor-parallel + exposed comm + optimizer + exposed disk.
Then the new flags' bad values are refused with a message naming the flag."""
import atexit, shutil, subprocess, sys, tempfile

import rule_checks
from rule_checks import check, close, failures

zero = sys.argv[1]
work = tempfile.mkdtemp(prefix="disk_time.")
atexit.register(shutil.rmtree, work, True)  # sys.exit on a failure runs it too
V, T, C, L, N = 256, 64, 64, 2, 2
GPT = ["--vocab", str(V), "--seq-len", str(T), "--n-embd", str(C), "--n-layer", str(L), "--n-head", "4"]
MACHINE = ["--peak-tflops", "0.01", "--achieved-fraction", "0.5", "--intra-node-bandwidth", "1GB/s",
           "--host-memory-bandwidth", "2GB/s", "--comm", "threads"]


def estimate(name, config, *flags):
    return rule_checks.estimate(zero, work, name, config, *GPT, *MACHINE, *flags)


def bandwidth(text):  # "0.05GB/s" -> bytes/s
    return float(text.replace("GB/s", "")) * 1e9


# The GPT's units as the model lays them out: embeddings (wte, wpe), the blocks, the final LayerNorm.
units = [V * C + T * C] + [12 * C * C + 13 * C] * L + [2 * C]
slices = [-(-u // N) for u in units]  # each unit padded to a multiple of N ranks, a rank's slice


def check_step_sum(name, t):
    close(t["step"], t["compute"] + t["tensor_parallel"] + t["comm_exposed"] + t["optimizer"] + t["disk_exposed"], f"{name}: step")
    close(t["disk_exposed_share"], t["disk_exposed"] / t["step"], f"{name}: disk share")


# The optimizer on NVMe, two ranks on one node: disk-bound, then CPU-bound.
SUB_GROUP = 5000
opt_nvme = {"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0,
            "zero_optimization": {"stage": 1, "sub_group_size": SUB_GROUP,
                                  "offload_optimizer": {"device": "nvme", "nvme_path": "nvme_path"}}}
for case, read_bw, write_bw in [("disk-bound", "0.05GB/s", "0.04GB/s"), ("cpu-bound", "500GB/s", "400GB/s")]:
    report, p = estimate(case, opt_nvme, "--ranks", str(N), "--ranks-per-node", str(N),
                         "--disk-read-bandwidth", read_bw, "--disk-write-bandwidth", write_bw)
    t, traffic, per_node = p["step_time"], p["nvme_traffic_bytes_per_step"], report["ranks_per_node"]
    check(traffic["read"] == traffic["written"] == 12 * sum(slices), f"{case}: 12 bytes a shard element read and written: {traffic}")
    S = sum(-(-s // SUB_GROUP) for s in slices)
    check(p["nvme_sub_groups"] == S, f"{case}: {p['nvme_sub_groups']} sub-groups, the slices cut to {SUB_GROUP}: {S}")
    disk = traffic["read"] * per_node / bandwidth(read_bw) + traffic["written"] * per_node / bandwidth(write_bw)
    close(t["disk"], disk, f"{case}: disk seconds")
    cpu = p["shard_parameters"] * 28 * per_node / 2e9 + p["host_link"]["host_to_device_bytes"] / report["link_bandwidth_bytes_per_s"]
    close(t["disk_exposed"], max(disk, cpu) + min(disk, cpu) / S - cpu, f"{case}: disk exposed")
    check((disk > cpu) == (case == "disk-bound"), f"{case}: disk {disk} s against CPU {cpu} s")
    check_step_sum(case, t)

# The parameters on NVMe (stage 3, host Adam), one rank: a slow disk, so the reads outlast compute.
for buffers in [5, 1]:
    name = f"param-buffers-{buffers}"
    config = {"train_micro_batch_size_per_gpu": 1,
              "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                    "offload_param": {"device": "nvme", "nvme_path": "nvme_path", "buffer_count": buffers}}}
    report, p = estimate(name, config, "--ranks", "1", "--disk-read-bandwidth", "0.01GB/s", "--disk-write-bandwidth", "0.02GB/s")
    t, traffic = p["step_time"], p["nvme_traffic_bytes_per_step"]
    check(traffic["parameters_read"] == traffic["read"] > 0, f"{name}: every read is the parameters': {traffic}")
    reads, writes = traffic["read"] / 1e7, traffic["written"] / 2e7
    close(t["disk"], reads + writes, f"{name}: disk seconds")
    busy = t["compute"] + t["tensor_parallel"]
    check(reads > busy, f"{name}: the reads ({reads} s) outlast forward and backward ({busy} s)")
    under_compute = reads if buffers == 1 else reads - busy  # one buffer is the window: no read ahead
    close(t["disk_exposed"], under_compute + writes, f"{name}: disk exposed")
    check_step_sum(name, t)

# Bad values for the new flags: refused, naming the flag.
for flag, value, message in [("--disk-read-bandwidth", "fast", "cannot read 'fast' as a bandwidth for --disk-read-bandwidth"),
                             ("--disk-write-bandwidth", "0GB/s", "--disk-write-bandwidth must be positive"),
                             ("--disk-read-bandwidth", "2G/s", "'G' alone is ambiguous")]:
    r = subprocess.run([zero, "estimate", *GPT, *MACHINE, flag, value], capture_output=True, text=True)
    check(r.returncode == 1 and message in r.stderr and r.stdout == "", f"{flag} {value}: exit {r.returncode}, {r.stderr!r}")
r = subprocess.run([zero, "estimate", *GPT, "--disk-read-bandwidth", "2GB/s"], capture_output=True, text=True)
check(r.returncode == 1 and "--disk-read-bandwidth is for the step time" in r.stderr, f"without --peak-tflops: {r.stderr!r}")

if failures:
    sys.exit("disk_time: " + "\n  ".join(failures))
print("disk_time: the disk term is the rows' own bytes over the bandwidths, overlapped as docs/estimate.md says")
