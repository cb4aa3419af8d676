#!/usr/bin/env python3
"""nvme_advice.py ZERO: the advisor proposes the NVMe tier when the host memory given is too small
for host offload (planner/nvme_advice.h). Every host figure is taken from the planner's own rows
(zero estimate --json) and set against the text of the same run:
  - with host offload's own need as --host-memory, host offload (2+opt) is advised, no NVMe row;
  - one byte less: the +nvme rows appear and the advice is the NVMe placement, the reason naming
    the host given, host offload's need and the NVMe placement's host and disk figures;
  - one byte less than the NVMe placement's need: nothing fits, and the reasons say both do not."""
import atexit, json, os, re, shutil, subprocess, sys, tempfile

zero = sys.argv[1]
ARGS = ["estimate", "--model", "llama2-7b", "--ranks", "1", "--device-memory", "80GiB"]
work = tempfile.mkdtemp(prefix="nvme_advice.")
atexit.register(shutil.rmtree, work, True)  # sys.exit on a failure runs it too


def gib(n):  # the size as the report prints it: 2^10 steps, two decimals
    if n < 1024:
        return f"{n} B"
    v, units = n / 1024, ["KiB", "MiB", "GiB"]
    u = 0
    while u < 2 and v >= 1024:
        v, u = v / 1024, u + 1
    return f"{v:.2f} {units[u]}"


def estimate(host_bytes):
    path = os.path.join(work, f"{host_bytes}.json")
    text = subprocess.run([zero, *ARGS, "--host-memory", f"{host_bytes}B", "--json", path], check=True,
                          capture_output=True, text=True).stdout
    report = json.load(open(path))
    return text, report, {p["label"]: p for p in report["plans"]}


def fits_device(p):
    return p["fits"]["device"]


def check(cond, what, text):
    if not cond:
        sys.exit(f"FAIL: {what}\n{text}")


# Plenty of host memory: host offload's rows and their needs.
text, report, rows = estimate(1 << 50)
opt_need = min(p["host_bytes_per_node"] for p in rows.values()
               if p["offload_optimizer"] and not p["offload_optimizer_nvme"] and fits_device(p))
check(report["recommendation"]["label"] == "2+opt" and not report["recommendation"]["nvme_rows_added"],
      "with plenty of host memory the advice is host offload (2+opt), without NVMe rows", text)

# Exactly host offload's need: still host offload.
text, report, rows = estimate(opt_need)
check(report["recommendation"]["label"] == "2+opt" and not any("+nvme" in l for l in rows),
      f"with --host-memory {opt_need}B (2+opt's own need) the advice is 2+opt and no +nvme row", text)

# One byte less: the NVMe placement, and why.
cap = opt_need - 1
text, report, rows = estimate(cap)
label = report["recommendation"]["label"]
check(report["recommendation"]["nvme_rows_added"] and label == "2+nvme", f"with --host-memory {cap}B the advice is 2+nvme", text)
nvme = rows[label]
check(nvme["host_bytes_per_node"] <= cap < opt_need, "the cap lies between the NVMe placement's need and host offload's", text)
check("recommended: stage 2 with optimizer offload to NVMe" in text, "the recommended line names the NVMe tier", text)
reason = next((l for l in text.split("\n") if l.startswith(f"  stage {label}: fits")), "")
for figure in [f"host {gib(nvme['host_bytes_per_node'])} of {gib(cap)} per node",
               f"host offload needs at least {gib(opt_need)} of host memory per node",
               f"more than the {gib(cap)} given",
               f"NVMe needs {gib(nvme['host_bytes_per_node'])} of host memory per node",
               f"{gib(nvme['nvme_bytes']['total'])} per rank on nvme_path",
               f"read ({gib(nvme['nvme_traffic_bytes_per_step']['read'])})",
               f"written ({gib(nvme['nvme_traffic_bytes_per_step']['written'])})"]:
    check(figure in reason, f"the reason names '{figure}' (the rows' own figures)", text)
check(re.search(rf"\n{re.escape(label)} [^\n]*<- recommended\n", text), "the table marks the 2+nvme row", text)

# One byte less than the NVMe placement needs: neither fits, and the reasons say so for both.
low = min(p["host_bytes_per_node"] for l, p in rows.items() if p["offload_optimizer_nvme"] and fits_device(p)) - 1
text, report, rows = estimate(low)
check(report["recommendation"]["label"] is None and "recommended: nothing fits on 1 rank" in text, "nothing fits", text)
for l in ["2+opt", "2+nvme"]:
    check(re.search(rf"\n  stage {re.escape(l)}: does not fit: needs {re.escape(gib(rows[l]['host_bytes_per_node']))}[^\n]* of host memory per node",
                    text), f"{l} does not fit, with its host need", text)
check("or the NVMe tier" not in text, "no advice to try the NVMe tier once it was weighed", text)
print("ok: host offload at its need, 2+nvme one byte below it, nothing below the NVMe need")
