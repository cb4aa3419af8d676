#!/usr/bin/env python3
"""step_time_papers.py REPO BUILD: docs/estimate.md's table of the step-time model against published
runs and zero's own measured steps. Runs the page's commands (the first ```sh block after the
table) in a temporary directory, reads each row's JSON (ROW.json), and checks, row by row:
  - the predicted column is what zero estimate prints now (to the digits shown), and the
    difference column is predicted / published - 1 (to the percent);
  - the prediction is within the row's bound of the published figure; a bound marked "(not met)"
    is a miss the page admits, and the row must still be beyond it (else the mark is stale).
Quantities: "TFLOP/s per GPU (PLAN)", "ms per step (PLAN)", "speedup per GPU over `ROW` (PLAN)"
(this row's TFLOP/s per device over ROW's), PLAN being the label of the plan in zero estimate's table;
"speedup per GPU over `ROW` (PLAN over BASE)": this row's PLAN over ROW's BASE (ZeRO++ over ZeRO-3).
Deterministic: the measured figures are the table's, nothing is timed here."""
import json, os, re, subprocess, sys, tempfile

repo, build = sys.argv[1], sys.argv[2]
text = open(os.path.join(repo, "docs", "estimate.md"), encoding="utf-8").read()
section = text[text.index("### Checked against published runs"):]
rows = [[c.strip() for c in line.strip().strip("|").split("|")]
        for line in section.split("\n") if line.startswith("| `")]
assert len(rows) >= 5, f"expected the table's rows, found {len(rows)}"
block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)

work = tempfile.mkdtemp(prefix="step_time_papers.")
env = dict(os.environ, PATH=build + os.pathsep + os.environ["PATH"])
subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env, check=True)


def number(cell):
    return float(cell.replace(",", "").replace("\u2212", "-").rstrip("%"))


def plan_of(row, label):
    plans = json.load(open(os.path.join(work, row + ".json")))["plans"]
    matches = [p for p in plans if p["label"] == label]
    assert matches, f"{row}: no plan {label} in {[p['label'] for p in plans]}"
    assert "missing" not in matches[0]["step_time"], (row, matches[0]["step_time"])
    return matches[0]["step_time"]


failures = []
missed = []
for name, _run, quantity, published, predicted, difference, bound in rows:
    row = name.strip("`")
    m = re.fullmatch(r"(TFLOP/s per GPU|ms per step|speedup per GPU over `([\w-]+)`) \((\S+)(?: over (\S+))?\)", quantity)
    assert m, f"{row}: quantity {quantity!r} is not one this test knows"
    kind, base, label, base_label = m.group(1), m.group(2), m.group(3), m.group(4) or m.group(3)
    t = plan_of(row, label)
    value = {"TFLOP/s per GPU": lambda: t["tflops_per_device"], "ms per step": lambda: t["step"] * 1e3}.get(
        kind, lambda: t["tflops_per_device"] / plan_of(base, base_label)["tflops_per_device"])()
    shown = predicted.replace(",", "")
    digits = len(shown.split(".")[1]) if "." in shown else 0
    off = value / number(published) - 1
    print(f"{row:>16}: predicted {value:.4g} (table {predicted}), published {published}, {100 * off:+.1f}% (bound {bound})")
    if abs(value - number(predicted)) > 0.5 * 10 ** -digits + 1e-9:
        failures.append(f"{row}: zero estimate predicts {value:.{digits}f}, the table says {predicted}")
    if abs(100 * off - number(difference)) > 1:
        failures.append(f"{row}: the difference is {100 * off:+.1f}%, the table says {difference}")
    b = re.fullmatch(r"(\d+)%( \(not met\))?", bound)
    assert b, f"{row}: bound {bound!r} is not N% or N% (not met)"
    beyond = abs(off) > int(b.group(1)) / 100
    if b.group(2):
        missed.append(row)
        if not beyond:
            failures.append(f"{row}: {100 * off:+.1f}% is within {b.group(1)}% now: drop the table's '(not met)'")
    elif beyond:
        failures.append(f"{row}: {100 * off:+.1f}% from the published {published}, beyond the bound {bound}")
if failures:
    sys.exit("step_time_papers: " + "; ".join(failures))
print(f"step_time_papers: {len(rows)} rows as the table shows them, {len(rows) - len(missed)} within their bounds"
      + (f"; beyond them, as the table says: {', '.join(missed)}" if missed else ""))
