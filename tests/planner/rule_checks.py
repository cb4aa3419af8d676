"""What the step-time tests (disk_time.py, zeropp_time.py) share: failures collected, not raised, so
one run names every rule that breaks; zero estimate run with a config, its configured row."""
import json, math, os, subprocess

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def close(a, b, what):
    check(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), f"{what}: zero says {a!r}, the rule {b!r}")


def estimate(zero, work, name, config, *args):
    """zero estimate ARGS with `config` written to WORK/NAME.config.json: (its report, its configured row)."""
    cfg, out = os.path.join(work, name + ".config.json"), os.path.join(work, name + ".json")
    json.dump(config, open(cfg, "w"))
    subprocess.run([zero, "estimate", *args, "--config", cfg, "--json", out], check=True, capture_output=True, text=True)
    report = json.load(open(out))
    rows = [p for p in report["plans"] if p["configured"]]
    check(len(rows) == 1, f"{name}: one row of the config, not {len(rows)}")
    return report, rows[0]
