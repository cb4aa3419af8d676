#!/usr/bin/env python3
"""check_demo_svg.py SVG V T C L N DTYPE [--all-checkpointed]

Parses the figure `zero demo` wrote as XML and checks it against numbers computed here, from
the model shape alone (not from anything zero printed):
  - one model-state bar group per run (stages 0-3, 2+opt, 3+opt+param, and 3+ckpt unless every
    run checkpoints), each carrying the paper's formula mark for its stage and precision and that
    formula's value for Psi = V*C + T*C + L*(12C^2 + 13C) + 2C parameters, with the ledger's
    measured bytes beside it (within padding);
  - the host tier's mark and bytes for the offload runs;
  - a traffic panel: per run, the bytes sent per step beside 2Psi(N-1)/N or (3Psi + 2E)(N-1)/N
    elements of the training type;
  - the loss curves drawn as one line with a sentence saying so (the runs are bit-identical);
  - the checkpointed run's activation peak below stage 3's, with a note saying by how much.
Exits 0 when all hold, else prints each failure and exits 1.
"""
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)


def near(measured, formula, rel, absolute):
    return abs(measured - formula) <= rel * formula + absolute


def state_terms(stage, opt, param, b, k):
    """(bytes per parameter, sharded) for parameters, gradients, optimizer state on the device."""
    if opt:
        return [(0 if param else b, stage == 3), (0, False), (0, False)]
    return [(b, stage == 3), (b, stage >= 2), (k, stage >= 1)]


def mark(terms):
    words = ["%d\u03a8%s" % (bytes_, "/N" if sharded else "") for bytes_, sharded in terms if bytes_ > 0]
    return "+".join(words) if words else "0"


def main(argv):
    all_ckpt = "--all-checkpointed" in argv
    argv = [a for a in argv if a != "--all-checkpointed"]
    if len(argv) != 8:
        print(__doc__)
        return 2
    path = argv[1]
    V, T, C, L, N = (int(x) for x in argv[2:7])
    b, k = (4, 8) if argv[7] == "fp32" else (2, 12)
    psi = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C
    tied = (V + T) * C
    root = ET.parse(path).getroot()  # raises on malformed XML
    expect(root.tag == NS + "svg", "root element is %s, not svg" % root.tag)

    runs = [(0, False, False, False), (1, False, False, False), (2, False, False, False), (3, False, False, False),
            (2, True, False, False), (3, True, True, False)]
    if not all_ckpt:
        runs.append((3, False, False, True))
    labels = ["%d%s%s%s" % (s, "+opt" if o else "", "+param" if p else "", "+ckpt" if c else "") for s, o, p, c in runs]
    groups = [g for g in root.iter(NS + "g") if g.get("class") == "state-group"]
    expect([g.get("data-label") for g in groups] == labels,
           "model-state groups %s, expected %s" % ([g.get("data-label") for g in groups], labels))
    for g, (stage, opt, param, _) in zip(groups, runs):
        label = g.get("data-label")
        terms = state_terms(stage, opt, param, b, k)
        want = sum(bytes_ * psi / (N if sharded else 1) for bytes_, sharded in terms)
        got = float(g.get("data-state-formula-bytes"))
        expect(g.get("data-state-mark") == mark(terms), "%s: mark %r, expected %r" % (label, g.get("data-state-mark"), mark(terms)))
        shown = [t.text for t in g.iter(NS + "text") if t.get("class") == "mark"]
        expect(mark(terms) in shown, "%s: mark %r not drawn (drawn: %s)" % (label, mark(terms), shown))
        expect(abs(got - want) <= 1, "%s: formula %.0f bytes, expected %.0f for Psi = %d" % (label, got, want, psi))
        measured = float(g.get("data-state-measured-bytes"))
        expect(near(measured, want, 0.02, 4096), "%s: measured %.0f bytes, formula %.0f" % (label, measured, want))
        if opt:
            host = (2 * b + k) * psi / N
            expect(g.get("data-host-mark") == "%d\u03a8/N" % (2 * b + k), "%s: host mark %r" % (label, g.get("data-host-mark")))
            expect(abs(float(g.get("data-host-formula-bytes")) - host) <= 1, "%s: host formula" % label)
            expect(near(float(g.get("data-host-measured-bytes")), host, 0.02, 4096), "%s: host measured" % label)
        else:
            expect(g.get("data-host-mark") is None, "%s: a host bar without offload" % label)

    panels = [g for g in root.iter(NS + "g") if g.get("class") == "traffic-panel"]
    expect(len(panels) == 1, "%d traffic panels, expected 1" % len(panels))
    traffic = [g for g in root.iter(NS + "g") if g.get("class") == "traffic-group"]
    expect(len(traffic) == len(runs), "%d traffic groups, expected %d" % (len(traffic), len(runs)))
    for g, (stage, _, _, _) in zip(traffic, runs):
        want = (3 * psi + 2 * tied if stage == 3 else 2 * psi) * (N - 1) / N * b
        expect(abs(float(g.get("data-traffic-formula-bytes")) - want) <= 1, "%s: traffic formula" % g.get("data-label"))
        expect(g.get("data-traffic-mark", "").startswith("(3\u03a8 + 2E)" if stage == 3 else "2\u03a8"),
               "%s: traffic mark %r" % (g.get("data-label"), g.get("data-traffic-mark")))
        expect(near(float(g.get("data-traffic-measured-bytes")), want, 0.01, 1024),
               "%s: sent %s bytes, formula %.0f" % (g.get("data-label"), g.get("data-traffic-measured-bytes"), want))

    lines = [p for p in root.iter(NS + "polyline") if p.get("class") == "loss"]
    notes = [t.text or "" for t in root.iter(NS + "text") if t.get("class") == "loss-note"]
    expect(len(lines) == 1, "%d loss curves, expected one line for bit-identical runs" % len(lines))
    expect(any("same bits at every step" in n for n in notes), "no sentence saying the losses are identical: %s" % notes)

    if not all_ckpt:
        act = {g.get("data-label"): float(g.get("data-activation-bytes")) for g in root.iter(NS + "g")
               if g.get("class") == "working-group"}
        expect(0 < act.get("3+ckpt", 0) < act.get("3", 0), "checkpointed activations %s" % act)
        ckpt_notes = [t.text or "" for t in root.iter(NS + "text") if t.get("class") == "checkpointing-note"]
        expect(any("3+ckpt against 3" in n for n in ckpt_notes), "no checkpointing note: %s" % ckpt_notes)

    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("ok: %s: %d runs, marks and traffic for Psi = %d, N = %d, %s" % (path, len(runs), psi, N, argv[7]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
