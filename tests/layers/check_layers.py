#!/usr/bin/env python3
"""Checks the shape of zero's house against its build (issue 28, parts 1 and 2).

1. Layers: every `#include "X/..."` in src/ and include/zero/ names a layer that the including
   file's layer links (directly or through the layers it links), as src/CMakeLists.txt declares
   them with zero_layer(NAME BELOW ... HEADERS ...) and writes them to <build>/layers.txt. A public
   header (include/zero/X.h, included as "zero/X.h") belongs to the layer whose HEADERS name it;
   one that no layer names is a problem. The files zero_api_only() names include only public
   headers and each other. The build runs this part (--includes-only) before any layer compiles,
   so a back-edge include fails the build.
2. Docs: the table in docs/layers.md is the one these targets give (--write-docs rewrites it).
3. Backends: no file outside src/backends/ names a backend (a quoted backend or device
   communicator name, as the backends' facts and registrations declare them).

Exit 0 when all hold; otherwise 1, with one line per problem saying where and what to do.
"""
import argparse
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([^"]+)"')
DOC_BEGIN = "<!-- layers: begin (generated from src/CMakeLists.txt by tests/layers/check_layers.py --write-docs) -->"
DOC_END = "<!-- layers: end -->"


def read_graph(path):
    """({layer: [layers it links]} in the order of the file (bottom up), {public header: layer},
    {layer: [its API-only files]})."""
    graph, public, api_only = {}, {}, {}
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, rest = line.partition(":")
        kind, _, layer = name.strip().rpartition(" ")
        if kind == "public":
            public.update((h, layer) for h in rest.split())
        elif kind == "api-only":
            api_only.setdefault(layer, []).extend(rest.split())
        else:
            graph[layer] = rest.split()
    return graph, public, api_only


def reachable(graph, layer):
    seen, pending = set(), list(graph.get(layer, []))
    while pending:
        x = pending.pop()
        if x not in seen:
            seen.add(x)
            pending.extend(graph.get(x, []))
    return seen


def sources(root):
    for p in sorted((root / "src").rglob("*")):
        if p.suffix in (".h", ".cpp", ".cu", ".cuh") and p.is_file():
            yield p


def public_headers(root):
    return sorted((root / "include" / "zero").glob("*.h"))


def file_layer(rel, public):
    """The layer of a file: its folder under src/, or for include/zero/X.h the layer naming X."""
    if rel.startswith("include/zero/"):
        return public.get(rel.split("/")[-1])
    return rel.split("/")[1]


def check_graph(graph):
    problems, seen = [], set()
    for layer, below in graph.items():
        for b in below:
            if b not in seen:
                problems.append(f"layers.txt: layer {layer} links {b}, which is not below it: reorder src/CMakeLists.txt")
        seen.add(layer)
    return problems


def check_includes(root, graph, public, pretend=()):
    problems = []
    paths = list(sources(root)) + public_headers(root)
    files = [(p.relative_to(root).as_posix(), p.read_text(errors="replace").splitlines()) for p in paths]
    files += [(f, [f'#include "{inc}"']) for f, inc in pretend]
    for rel, lines in files:
        layer = file_layer(rel, public)
        if layer is None:
            problems.append(f"{rel}: a public header no layer names: add it to HEADERS of its layer's zero_layer() in src/CMakeLists.txt")
            continue
        if layer not in graph:
            problems.append(f"{rel}: in folder {layer}/, which is no layer: add it with zero_layer() in src/CMakeLists.txt")
            continue
        allowed = reachable(graph, layer) | {layer}
        for n, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = public.get(m.group(2)) if m.group(1) == "zero" else m.group(1)
            if m.group(1) == "zero" and target is None:
                problems.append(f"{rel}:{n}: includes zero/{m.group(2)}, which no layer names as a public header (include/zero/)")
            elif target in graph and target not in allowed:
                problems.append(f"{rel}:{n}: includes {m.group(1)}/{m.group(2)} of layer {target}, which layer {layer} does not link "
                                f"(it links {', '.join(graph[layer]) or 'nothing'}): a back-edge; move the code down, or the include up")
    return problems


def check_api_only(root, api_only, pretend=()):
    """The API-only files include public headers ("zero/...") and each other only."""
    problems = []
    for layer, files in api_only.items():
        for rel in files:
            path = root / "src" / rel
            if not path.is_file():
                problems.append(f"src/{rel}: named by zero_api_only({layer} ...) in src/CMakeLists.txt, but there is no such file")
                continue
            lines = path.read_text(errors="replace").splitlines() + [f'#include "{inc}"' for f, inc in pretend if f == rel]
            for n, line in enumerate(lines, 1):
                m = INCLUDE.match(line)
                if m and m.group(1) != "zero" and f"{m.group(1)}/{m.group(2)}" not in files:
                    problems.append(f"src/{rel}:{n}: includes {m.group(1)}/{m.group(2)}, but this file is built on the public API "
                                    f"alone (zero_api_only): include a public header (include/zero/), or make the API public")
    return problems


def doc_table(graph, public):
    rows = ["| layer | links (the layers below it that it uses) | public headers (`include/zero/`) |", "|---|---|---|"]
    for layer, below in graph.items():
        headers = ", ".join(h for h, owner in public.items() if owner == layer)
        rows.append(f"| {layer} | {', '.join(below) or '-'} | {headers or '-'} |")
    return "\n".join(rows)


def check_docs(root, graph, public):
    path = root / "docs" / "layers.md"
    text = path.read_text() if path.exists() else ""
    if DOC_BEGIN not in text or DOC_END not in text:
        return [f"docs/layers.md: no generated layer table: run tests/layers/check_layers.py --write-docs"]
    table = text.split(DOC_BEGIN, 1)[1].split(DOC_END, 1)[0].strip()
    if table != doc_table(graph, public):
        return ["docs/layers.md: the layer table differs from src/CMakeLists.txt's layers: run tests/layers/check_layers.py --write-docs"]
    return []


def backend_names(root):
    names = set()
    for p in (root / "src" / "backends").rglob("*.cpp"):
        names.update(re.findall(r'\.(?:name|communicator)\s*=\s*"([^"]+)"', p.read_text()))
    return names


# "cpu" is also DeepSpeed's offload target (offload_optimizer.device = "cpu": host memory), which
# is no backend; and the counting communicator (comm's own transport for the planner) shares
# its name with the counting device.
OFFLOAD = re.compile(r'offload|OffloadDevice|"none"', re.IGNORECASE)
# DeepSpeed's 1-bit optimizers name their collective library in the config (comm_backend_name =
# "nccl"): a config value zero reads and reports, not a backend it chooses by that name.
ALLOWED = {("src/comm/counting_comm.cpp", "counting"), ("src/config/optimizer_section.cpp", "nccl")}


def check_backend_names(root, public):
    """No file outside src/backends/ and the backends layer's public headers names a backend."""
    problems, names = [], backend_names(root)
    if not {"cpu", "cuda", "nccl"} <= names:
        return [f"src/backends: found backend names {sorted(names)}; expected cpu, cuda and nccl among them"]
    for p in list(sources(root)) + public_headers(root):
        rel = p.relative_to(root).as_posix()
        if file_layer(rel, public) == "backends":
            continue
        lines = p.read_text(errors="replace").splitlines()
        for n, line in enumerate(lines, 1):
            for name in names:
                if f'"{name}"' not in line or (rel, name) in ALLOWED:
                    continue
                if name == "cpu" and (OFFLOAD.search(line) or (n > 1 and OFFLOAD.search(lines[n - 2]))):
                    continue
                problems.append(f'{rel}:{n}: names the backend "{name}" outside src/backends/: ask backends/registry.h or facts.h instead')
    return problems


def self_test(root, graph, public, api_only):
    """Deliberate back-edges (through a src/ path and through a public header) and an API-only
    file reaching past the public API must be reported."""
    problems = []
    caught = check_includes(root, graph, public, pretend=[("src/device/back_edge.h", "engine/engine.h"),
                                                           ("src/device/back_edge2.h", "zero/engine.h")])
    for path, inc in (("src/device/back_edge.h", "engine/engine.h"), ("src/device/back_edge2.h", "zero/engine.h")):
        if not any(p.startswith(f"{path}:1: includes {inc} of layer engine") for p in caught):
            problems.append(f"self-test: an include of {inc} from device/ was not reported")
    if "model/llama.cpp" in api_only.get("model", []):
        caught = check_api_only(root, api_only, pretend=[("model/llama.cpp", "engine/stage.h")])
        if not any("src/model/llama.cpp" in p and "engine/stage.h" in p for p in caught):
            problems.append("self-test: an include of engine/stage.h from the API-only model/llama.cpp was not reported")
    else:
        problems.append("self-test: model/llama.cpp is not among the API-only files (zero_api_only in src/CMakeLists.txt)")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="the source tree")
    ap.add_argument("--graph", required=True, help="layers.txt, written by cmake into the build directory")
    ap.add_argument("--includes-only", action="store_true", help="only the layer graph and the includes (the build's check)")
    ap.add_argument("--write-docs", action="store_true", help="rewrite docs/layers.md's table from the graph")
    ap.add_argument("--self-test", action="store_true", help="also check that a deliberate back-edge is caught")
    a = ap.parse_args()
    root = pathlib.Path(a.root)
    graph, public, api_only = read_graph(a.graph)
    if a.write_docs:
        path = root / "docs" / "layers.md"
        text = path.read_text()
        head, rest = text.split(DOC_BEGIN, 1)
        tail = rest.split(DOC_END, 1)[1]
        path.write_text(f"{head}{DOC_BEGIN}\n{doc_table(graph, public)}\n{DOC_END}{tail}")
    problems = check_graph(graph) + check_includes(root, graph, public) + check_api_only(root, api_only)
    if not a.includes_only:
        problems += check_docs(root, graph, public) + check_backend_names(root, public)
    if a.self_test:
        problems += self_test(root, graph, public, api_only)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_layers: {len(graph)} layers; every include goes down" + ("" if a.includes_only else "; docs/layers.md matches; no backend named outside src/backends/"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
