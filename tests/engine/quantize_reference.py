#!/usr/bin/env python3
"""An independent NumPy model of ZeRO++'s weight quantiser (src/engine/quantize.h: symmetric
int8 in blocks of 2048 elements, one float32 scale m/127 a block, values rint(x * (127/m)),
round half to even), run on the inputs zero's test wrote and compared with zero's packets and
dequantised values, exactly. Also checks the round-trip bound |x - x'| <= m/254 (plus one
float32 rounding each way) and prints the measured error.

Usage: quantize_reference.py DIR
DIR/sizes.txt: the sizes k, one a line; for each i: DIR/in_i.f32 (k float32), DIR/packet_i.bin
(k int8 then ceil(k/2048) float32 scales), DIR/out_i.f32 (k float32).
Exit status 0 when all hold, 1 otherwise.
"""
import sys

import numpy as np

BLOCK = 2048


def reference(x):
    k = x.size
    q = np.zeros(k, dtype=np.int8)
    scales = []
    out = np.zeros(k, dtype=np.float32)
    for b in range(0, k, BLOCK):
        blk = x[b:b + BLOCK]
        m = np.float32(np.max(np.abs(blk)))
        scale = np.float32(m / np.float32(127))
        inv = np.float32(np.float32(127) / m) if m > 0 else np.float32(0)
        qb = np.clip(np.rint((blk * inv).astype(np.float32)), -127, 127).astype(np.int8)
        q[b:b + BLOCK] = qb
        scales.append(scale)
        out[b:b + BLOCK] = (qb.astype(np.float32) * scale).astype(np.float32)
    packet = q.tobytes() + np.array(scales, dtype=np.float32).tobytes()
    return packet, out


def main():
    d = sys.argv[1]
    ok = True
    worst_rel = 0.0
    for i, line in enumerate(open(f"{d}/sizes.txt").read().split()):
        k = int(line)
        x = np.fromfile(f"{d}/in_{i}.f32", dtype=np.float32)
        packet = open(f"{d}/packet_{i}.bin", "rb").read()
        out = np.fromfile(f"{d}/out_{i}.f32", dtype=np.float32)
        ref_packet, ref_out = reference(x)
        if x.size != k or packet != ref_packet or not np.array_equal(out.view(np.uint32), ref_out.view(np.uint32)):
            print(f"k={k}: zero's packet or values differ from the reference "
                  f"(packet {len(packet)} bytes vs {len(ref_packet)}, max |diff| {np.max(np.abs(out - ref_out)) if out.size == k else 'n/a'})")
            ok = False
            continue
        for b in range(0, k, BLOCK):
            blk, got = x[b:b + BLOCK].astype(np.float64), out[b:b + BLOCK].astype(np.float64)
            m = np.max(np.abs(blk))
            err = np.max(np.abs(blk - got))
            if err > m / 254 * (1 + 2 ** -20):
                print(f"k={k} block {b // BLOCK}: error {err} above m/254 = {m / 254}")
                ok = False
            if m > 0:
                worst_rel = max(worst_rel, err / m)
    print(f"[ measured ] worst |x - dequantised| / block max: {worst_rel:.3e} (bound 1/254 = {1 / 254:.3e})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
