#!/usr/bin/env python3
"""doc_blocks.py REPO BUILD [FILE.md...]: runs every fenced code block of README.md and docs/*.md.

Each file's blocks run in order in a temporary directory of its own, with BUILD on PATH and
`build`, `tests`, `scripts` and `bench` there as links into the tree, so `zero ...` and
`build/zero ...` both work and a block may use what an earlier block of the page wrote:
  ```sh       the block runs under `bash -euo pipefail`; it must exit 0.
  ```console  each `$ COMMAND` runs; every line shown after it must be a line of its output.
  ```json     a config: `zero train --config` on it, one step, must succeed.
  ```cpp, ```cmake  an excerpt of a program under examples/: it must appear in one of its files
              verbatim (the program itself is built and run by tests/library/).
A block that cannot run here (it sets up a machine, or needs several hosts) carries the marker
`<!-- doc-test: check only -->` on the line before its fence; it is checked instead: every
`bash FILE` it names exists, and each flag it gives a `zero` command is one that command's --help
names. Any other block (no language, or another one) fails the test, so nothing escapes it.
"""
import os, re, shlex, subprocess, sys, tempfile, time

MARKER = "<!-- doc-test: check only -->"
FENCE = re.compile(r"^```(\S*)\s*$")


def blocks(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        marked = i > 0 and lines[i - 1].strip() == MARKER
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        yield start + 1, lang, marked, "\n".join(body) + "\n"
        i += 1


def zero_commands(text):
    """(subcommand words, flags) of every `zero ...` or `build/zero ...` invocation in text."""
    text = text.replace("\\\n", " ")
    for line in text.split("\n"):
        line = line.split("#", 1)[0].lstrip("$ ")
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        for k, w in enumerate(words):
            if os.path.basename(w) != "zero" or k + 1 >= len(words):
                continue
            rest = words[k + 1:]
            cmd = [rest[0]] + ([rest[1]] if rest[0] in ("bench", "ckpt", "data") and len(rest) > 1 else [])
            flags = [a.split("=", 1)[0] for a in rest if a.startswith("--")]
            yield cmd, flags


def check_only(body, repo, zero, helps):
    problems = []
    for script in re.findall(r"\bbash\s+(\S+)", body):
        if not os.path.exists(os.path.join(repo, script)):
            problems.append(f"bash {script}: no such file in the tree")
    for cmd, flags in zero_commands(body):
        key = " ".join(cmd)
        if key not in helps:
            helps[key] = subprocess.run([zero] + cmd + ["--help"], capture_output=True, text=True).stdout
        for f in flags:
            if f != "--help" and not re.search(re.escape(f) + r"[ =\n]", helps[key]):
                problems.append(f"zero {key} {f}: zero {key} --help does not name it")
    return problems


def excerpt(body, repo):
    for folder, _, names in os.walk(os.path.join(repo, "examples")):
        for name in names:
            try:
                if body in open(os.path.join(folder, name), encoding="utf-8").read():
                    return []
            except (UnicodeDecodeError, OSError):
                continue
    return ["no file under examples/ holds this block verbatim: copy it from the program it shows"]


def run(cmd, cwd, env, timeout=120):
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def console(body, cwd, env):
    problems, cmd, shown = [], None, []

    def finish():
        if cmd is None:
            return
        code, out = run(cmd, cwd, env)
        got = {l.rstrip() for l in out.split("\n")}
        if code != 0:
            problems.append(f"$ {cmd}: exit {code}\n{out}")
        for line in shown:
            if line.strip() and line.rstrip() not in got:
                problems.append(f"$ {cmd}: the output lacks the line shown:\n  {line}\n--- output:\n{out}")
                break

    for line in body.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            finish()
            cmd, shown = line[2:], []
        else:
            shown.append(line)
    finish()
    return problems


def main():
    repo, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    files = sys.argv[3:] or [os.path.join(repo, "README.md")] + sorted(
        os.path.join(repo, "docs", f) for f in os.listdir(os.path.join(repo, "docs")) if f.endswith(".md"))
    zero = os.path.join(build, "zero")
    env = dict(os.environ, PATH=build + os.pathsep + os.environ["PATH"], OMP_NUM_THREADS="1")
    helps, failures, count = {}, 0, 0
    for path in files:
        rel = os.path.relpath(path, repo)
        with tempfile.TemporaryDirectory(prefix="doc-blocks-") as tmp:
            os.symlink(build, os.path.join(tmp, "build"))
            for d in ("tests", "scripts", "bench"):
                os.symlink(os.path.join(repo, d), os.path.join(tmp, d))
            for line, lang, marked, body in blocks(path):
                count += 1
                t0 = time.time()
                if marked:
                    problems = check_only(body, repo, zero, helps)
                elif lang == "sh":
                    problems = check_only(body, repo, zero, helps)
                    code, out = run(body, tmp, env)
                    if code != 0:
                        problems.append(f"exit {code}\n{out}")
                elif lang == "console":
                    problems = check_only(body, repo, zero, helps) + console(body, tmp, env)
                elif lang == "json":
                    cfg = os.path.join(tmp, f"block-{line}.json")
                    open(cfg, "w").write(body)
                    code, out = run(f"zero train --config {shlex.quote(cfg)} --steps 1 --sample 0 --eval-batches 1", tmp, env)
                    problems = [] if code == 0 else [f"zero train --config on it: exit {code}\n{out}"]
                elif lang in ("cpp", "cmake"):
                    problems = excerpt(body, repo)
                else:
                    problems = [f"a ```{lang} block: give it sh, console, json, cpp or cmake, or the marker {MARKER}"]
                status = "FAIL" if problems else "ok"
                print(f"{status} {rel}:{line} ({lang or 'no language'}{', check only' if marked else ''}, {time.time() - t0:.1f} s)")
                for p in problems:
                    print("    " + p.replace("\n", "\n    "))
                failures += bool(problems)
    # The README's two commands are checked, not run: the test command is what CI runs.
    ci = open(os.path.join(repo, ".ci", "run")).read()
    if "bash scripts/test.sh" not in ci:
        print("FAIL .ci/run does not run bash scripts/test.sh, the README's test command")
        failures += 1
    print(f"{count} blocks, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
