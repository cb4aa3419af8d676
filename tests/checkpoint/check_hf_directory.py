#!/usr/bin/python3
"""check_hf_directory.py OUTDIR ONE_FILE MAX_SHARD_BYTES EXPECT_JSON [NAME=ORIGINAL ...]: reads the
Hugging Face directory `zero ckpt export --out OUTDIR` wrote as from_pretrained would find its
parts (safetensors_read.py: json, struct, NumPy) and checks:
  - config.json holds every field of EXPECT_JSON (the trained model's shape, as the test's run
    config gives it, and the dtype) with that value, and generation_config.json the same token ids;
  - the weights: one model.safetensors, or model-0000i-of-0000N.safetensors shards with
    model.safetensors.index.json whose weight_map names every tensor exactly once, each in the
    shard that holds it and no shard file it does not name, and whose total_size is the sum of
    the tensors' bytes; every shard's tensors fit MAX_SHARD_BYTES except a tensor larger than
    it, which is alone; each shard but the last could not have taken the next shard's first
    tensor (the packing rule); the shards' tensors, in order, are ONE_FILE's (the single-file
    export of the same checkpoint and dtype): names, dtypes, shapes and bytes, bit for bit;
  - each NAME=ORIGINAL: OUTDIR/NAME is byte-identical to ORIGINAL (the tokenizer's files), with
    tokenizer_config.json and special_tokens_map.json beside them; with none, the directory holds
    no tokenizer file at all.
Exits 1 on a failure."""
import json
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import safetensors_read  # noqa: E402

out, one_file, max_shard, expect = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
originals = dict(a.split("=", 1) for a in sys.argv[5:])
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


config = json.load(open(os.path.join(out, "config.json")))
for k, v in expect.items():
    check(config.get(k) == v, "config.json %s = %r, expected %r" % (k, config.get(k), v))
generation = json.load(open(os.path.join(out, "generation_config.json")))
for k in ("bos_token_id", "eos_token_id"):
    check(generation.get(k) == config.get(k), "generation_config.json %s = %r, config.json's %r" % (k, generation.get(k), config.get(k)))

# The weights, shard by shard.
files = sorted(f for f in os.listdir(out) if f.endswith(".safetensors"))
index_path = os.path.join(out, "model.safetensors.index.json")
shards = []  # [(name, header, data)] in order
if os.path.exists(index_path):
    index = json.load(open(index_path))
    n = len(files)
    check(n > 1 and files == ["model-%05d-of-%05d.safetensors" % (i + 1, n) for i in range(n)], "shard files %s" % files)
    for f in files:
        header, meta, data = safetensors_read.read_file(os.path.join(out, f))
        check(meta is not None and meta.get("format") == "pt", "%s: __metadata__ %r" % (f, meta))
        shards.append((f, header, data))
    seen = [name for _, h, _ in shards for name in h]
    check(len(seen) == len(set(seen)), "a tensor is in two shards")
    wm = index["weight_map"]
    check(sorted(wm) == sorted(seen), "weight_map's tensors differ from the shards'")
    check(all(wm.get(name) == f for f, h, _ in shards for name in h), "weight_map names another shard for a tensor")
    check(set(wm.values()) == set(files), "weight_map names files %s, the directory holds %s" % (sorted(set(wm.values())), files))
    sizes = [sum(e["data_offsets"][1] - e["data_offsets"][0] for e in h.values()) for _, h, _ in shards]
    check(index["metadata"]["total_size"] == sum(sizes), "total_size %d, the tensors have %d bytes" % (index["metadata"]["total_size"], sum(sizes)))
    for i, (f, h, _) in enumerate(shards):
        lone = len(h) == 1
        check(sizes[i] <= max_shard or lone, "%s: %d bytes of tensors, above %d, in %d tensors" % (f, sizes[i], max_shard, len(h)))
        if i + 1 < len(shards) and sizes[i] <= max_shard:
            first = next(iter(shards[i + 1][1].values()))
            nxt = first["data_offsets"][1] - first["data_offsets"][0]
            check(sizes[i] + nxt > max_shard, "%s (%d bytes) could have taken the next tensor (%d bytes)" % (f, sizes[i], nxt))
else:
    check(files == ["model.safetensors"], "no index, and the weight files are %s" % files)
    header, meta, data = safetensors_read.read_file(os.path.join(out, "model.safetensors"))
    shards.append(("model.safetensors", header, data))

one_header, _, one_data = safetensors_read.read_file(one_file)
got = [(name, e, safetensors_read.raw(e, data)) for _, h, data in shards for name, e in h.items()]
want = [(name, e, safetensors_read.raw(e, one_data)) for name, e in one_header.items()]
check([g[0] for g in got] == [w[0] for w in want], "the shards' tensors, in order, are not the single file's")
for (name, e, b), (_, we, wb) in zip(got, want):
    check(e["dtype"] == we["dtype"] and e["shape"] == we["shape"], "%s: %s %s, the single file's %s %s" % (name, e["dtype"], e["shape"], we["dtype"], we["shape"]))
    check(b == wb, "%s: its bytes differ from the single file's" % name)

# The tokenizer.
tokenizer_names = {"vocab.json", "merges.txt", "tokenizer.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}
present = tokenizer_names & set(os.listdir(out))
if originals:
    check(present == set(originals) | {"tokenizer_config.json", "special_tokens_map.json"}, "tokenizer files %s" % sorted(present))
    for name, original in originals.items():
        check(open(os.path.join(out, name), "rb").read() == open(original, "rb").read(), "%s differs from %s" % (name, original))
else:
    check(not present, "a run without a tokenizer file wrote %s" % sorted(present))
extra = set(os.listdir(out)) - tokenizer_names - set(files) - {"config.json", "generation_config.json", "model.safetensors.index.json"}
check(not extra, "unexpected files %s" % sorted(extra))

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("ok: %s: %d tensors in %d shard%s (max %d bytes) equal %s bit for bit; config as expected%s" % (
    out, len(got), len(shards), "" if len(shards) == 1 else "s", max_shard, one_file,
    "; tokenizer files identical: " + ", ".join(sorted(originals)) if originals else "; no tokenizer files"))
