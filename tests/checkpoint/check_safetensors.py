#!/usr/bin/env python3
"""check_safetensors.py CHECKPOINT_DIR FILE fp32|bf16 [mixed]: an independent reader (json and
struct only) of the safetensors file `zero ckpt export` wrote, checked against the checkpoint's
rank files read by the documented format (README: Checkpoints). With `mixed` (a bf16 or fp16
run), the masters must be true fp32 masters: some of their low 16 bits are set (16-bit
parameters saved in their place would have none). Exits non-zero on any difference."""
import json, struct, sys

ckpt, path, dtype = sys.argv[1], sys.argv[2], sys.argv[3]
mixed = len(sys.argv) > 4 and sys.argv[4] == "mixed"
m = json.load(open(ckpt + "/manifest.json"))
ranks = [open(ckpt + "/" + f["name"], "rb").read() for f in m["files"]]
ntensors = len(m["tensors"])
shard_offset, acc = [], 0
for u in m["units"]:
    shard_offset.append(acc)
    acc += u["slice"]

def master(p):  # the parameter's f32 bits, row-major, from the rank files
    u = m["units"][p["unit"]]
    numel = 1
    for d in p["shape"]:
        numel *= d
    out = []
    for e in range(p["unit_offset"], p["unit_offset"] + numel):
        r, within = divmod(e, u["slice"])
        at = 4 * (ntensors * shard_offset[p["unit"]] + within)  # tensor 0: master
        out.append(struct.unpack_from("<I", ranks[r], at)[0])
    return out

def hf_name(name):  # GPT-2 names (README: the mapping); returns (name, transposed)
    top = {"wte": "wte.weight", "wpe": "wpe.weight", "lnf.w": "ln_f.weight", "lnf.b": "ln_f.bias"}
    if name in top:
        return "transformer." + top[name], False
    _, layer, rest = name.split(".", 2)
    block = {"ln1.w": ("ln_1.weight", 0), "ln1.b": ("ln_1.bias", 0), "attn.w_qkv": ("attn.c_attn.weight", 1),
             "attn.b_qkv": ("attn.c_attn.bias", 0), "attn.w_proj": ("attn.c_proj.weight", 1), "attn.b_proj": ("attn.c_proj.bias", 0),
             "ln2.w": ("ln_2.weight", 0), "ln2.b": ("ln_2.bias", 0), "mlp.w_fc": ("mlp.c_fc.weight", 1),
             "mlp.b_fc": ("mlp.c_fc.bias", 0), "mlp.w_proj": ("mlp.c_proj.weight", 1), "mlp.b_proj": ("mlp.c_proj.bias", 0)}
    n, t = block[rest]
    return "transformer.h.%s.%s" % (layer, n), bool(t)

def to_bf16(bits):  # round to nearest even (finite values)
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16

data = open(path, "rb").read()
(hlen,) = struct.unpack_from("<Q", data, 0)
header = json.loads(data[8:8 + hlen])
base = 8 + hlen
meta = header.pop("__metadata__", None)
assert meta is not None and meta["format"] == "pt", "no __metadata__"
assert len(header) == len(m["parameters"]), "%d tensors, the checkpoint has %d parameters" % (len(header), len(m["parameters"]))
end_of_data = 0
low_bits = 0  # masters whose low 16 bits are not zero
for p in m["parameters"]:
    name, transposed = hf_name(p["name"])
    t = header[name]
    shape = p["shape"][::-1] if transposed else p["shape"]
    assert t["shape"] == shape, "%s: shape %s, expected %s" % (name, t["shape"], shape)
    assert t["dtype"] == ("F32" if dtype == "fp32" else "BF16"), name
    b, e = t["data_offsets"]
    want = master(p)
    low_bits += sum(1 for x in want if x & 0xFFFF)
    if transposed:
        rows, cols = p["shape"]
        want = [want[r * cols + c] for c in range(cols) for r in range(rows)]
    if dtype == "fp32":
        got = list(struct.unpack_from("<%dI" % len(want), data, base + b))
    else:
        got = list(struct.unpack_from("<%dH" % len(want), data, base + b))
        want = [to_bf16(x) for x in want]
    assert e - b == len(want) * (4 if dtype == "fp32" else 2), name
    bad = [i for i in range(len(want)) if got[i] != want[i]]
    assert not bad, "%s: %d elements differ, first at %d" % (name, len(bad), bad[0])
    end_of_data = max(end_of_data, e)
assert base + end_of_data == len(data), "the file has %d bytes after its tensors" % (len(data) - base - end_of_data)
if mixed:
    assert low_bits > 0, "every master is a 16-bit value: the checkpoint holds the 16-bit parameters, not the fp32 masters"
print("ok: %d tensors (%s) equal the checkpoint's parameters" % (len(header), dtype))
