#!/usr/bin/python3
"""hf_init_from_test.py MODE WORK ZERO: zero reading Hugging Face directories that this script
writes itself (hf_dirs.py: GPT-2 with Conv1D weights, LLaMA with grouped-query attention; one
file and shards with an index; F32, F16 and BF16). Modes:

  loss      zero eval --init-from DIR computes the loss the NumPy references (GPT-2 here, LLaMA
            tests/model/llama_reference.py) compute on the values the file holds, within 1e-5
            relative, for every directory.
  identity  zero ckpt import DIR then zero ckpt export gives every tensor back bit for bit (an F16
            file's values widened exactly; BF16 exported as bf16), for both families.
  stages    after one step at learning rate 0, zero train's final weights at stages 0-3, on 1-3
            ranks and with offload, are the file's values (SHA-256 in zero's layout order); also for
            a GPT-2 whose Conv1D weights are read in pieces.
  bytes     zero train --init-from DIR --ranks 4 --stage 3 (mpirun): the most any rank read is its
            quarter of the weights plus the slack of its slices' ends, not the model; all ranks
            together read the weights once (plus that slack).
  roundtrip (argument 4: GPT-2's tokenizer files) zero ckpt export --out OUTDIR of a LLaMA, a GPT
            on bytes and a GPT on GPT-2 BPE, sharded: zero eval --init-from OUTDIR gives the
            checkpoint's loss exactly, the BPE one with the directory's own tokenizer files.
  bad       each damaged directory or disagreeing config is refused with its message before any
            step (no "step" line, no checkpoint written).
  resume    fine-tuning from --init-from with --save resumes bit-identically (cli/resume_same.sh)
            and the straight run says what it read; model.init_from gives the same run.
  tokenizer (argument 4: a directory of GPT-2's tokenizer files) a directory holding them is read
            with them when no tokenizer is given, or the same files are; another is refused.
Exits 1 on a failure."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "model"))
import hf_dirs as hf  # noqa: E402
import llama_reference  # noqa: E402

mode, work, zero = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
TEXT = "/usr/share/common-licenses/GPL-3"


def run(*args, ok=True):
    r = subprocess.run([zero, *args], capture_output=True, text=True)
    if ok and r.returncode != 0:
        print("FAIL:", " ".join(args), "\n", r.stdout, r.stderr)
        sys.exit(1)
    return r


# (name, family, dtype, shards, GPT-2 name prefix, LLaMA tie)
DIRS = [("gpt2_f32", "gpt2", "F32", 1, "transformer.", False), ("gpt2_f16_sharded", "gpt2", "F16", 3, "transformer.", False),
        ("gpt2_bf16_bare", "gpt2", "BF16", 1, "", False), ("llama_f32", "llama", "F32", 1, "", False),
        ("llama_bf16_sharded_tied", "llama", "BF16", 2, "", True), ("llama_f16", "llama", "F16", 1, "", False)]


def make(name, family, dtype, shards, prefix, tied, seed=0):
    """Writes the directory; returns (config, stored values)."""
    rng = np.random.default_rng(seed)
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    if family == "gpt2":
        c = dict(hf.GPT2)
        t = hf.gpt2_tensors(c, rng, prefix)
        # An old file's attention-mask buffer, which zero accepts and does not read.
        mask = np.tril(np.ones((1, 1, 16, 16), np.float32))
        extra = {} if prefix else {"h.0.attn.bias": ("F32", mask.shape, mask.tobytes())}
        return c, hf.write_dir(d, hf.gpt2_config(c), t, dtype, shards, extra)
    c = dict(hf.LLAMA, tie_word_embeddings=tied)
    return c, hf.write_dir(d, hf.llama_config(c), hf.llama_tensors(c, rng), dtype, shards)


def windows(T):
    tokens = np.frombuffer(open(os.path.join(work, "data.txt"), "rb").read(), dtype=np.uint8).astype(np.int64)
    W = (len(tokens) - 1) // T
    return np.stack([tokens[w * T:w * T + T] for w in range(W)]), np.stack([tokens[w * T + 1:w * T + T + 1] for w in range(W)])


def check_loss():
    open(os.path.join(work, "data.txt"), "wb").write(open(TEXT, "rb").read()[:65])  # 4 windows of 16 tokens
    worst = 0
    for name, family, dtype, shards, prefix, tied in DIRS:
        c, p = make(name, family, dtype, shards, prefix, tied)
        out = os.path.join(work, name + ".eval.json")
        run("eval", "--init-from", os.path.join(work, name), "--data", os.path.join(work, "data.txt"), "--json", out)
        inputs, targets = windows(16)
        ref = hf.gpt2_loss(c, p, inputs, targets, prefix) if family == "gpt2" else llama_reference.forward(c, p, inputs, targets)[1]
        got = json.load(open(out))["loss"]
        err = abs(got - ref) / abs(ref)
        worst = max(worst, err)
        print(f"{name}: zero eval {got:.8f} reference {ref:.8f} rel err {err:.2e}")
        if err > 1e-5:
            print("FAIL: loss differs")
            sys.exit(1)
    print(f"ok: zero eval --init-from equals the NumPy references (max rel err {worst:.2e})")


def check_identity():
    for name, family, dtype, shards, prefix, tied in DIRS:
        if family == "gpt2" and not prefix:
            continue  # export writes GPT2LMHeadModel's prefixed names
        make(name, family, dtype, shards, prefix, tied)
        d, ck = os.path.join(work, name), os.path.join(work, name + ".ck")
        shutil.rmtree(ck, ignore_errors=True)
        run("ckpt", "import", d, "--out", ck)
        out = os.path.join(work, name + ".export.safetensors")
        run("ckpt", "export", ck, "--out", out, "--dtype", "bf16" if dtype == "BF16" else "fp32")
        files = [f for f in os.listdir(d) if f.endswith(".safetensors")]
        original = {}
        for f in files:
            original.update(hf.read_safetensors(os.path.join(d, f)))
        back = hf.read_safetensors(out)
        if set(original) != set(back):
            print("FAIL: tensor names differ:", sorted(set(original) ^ set(back)))
            sys.exit(1)
        for k, (dt, shape, raw) in original.items():
            bdt, bshape, braw = back[k]
            want = raw if dt != "F16" else np.frombuffer(raw, "<f2").astype("<f4").tobytes()  # f16 widens exactly
            if list(shape) != list(bshape) or want != braw:
                print(f"FAIL: {name}: tensor {k} differs after import and export ({dt} {shape} -> {bdt} {bshape})")
                sys.exit(1)
        print(f"{name}: {len(original)} tensors identical after import and export")
    print("ok: import then export is the identity on every tensor")


def bytes_read(out):
    m = re.search(r"init-from \S+: .*bytes read per rank: rank 0 (\d+), max (\d+), total (\d+)", out)
    if not m:
        print("FAIL: no init-from line\n", out)
        sys.exit(1)
    return [int(x) for x in m.groups()]


def check_bytes():
    N = 4
    for name, family, dtype, shards, prefix, tied in [DIRS[3], DIRS[1]]:
        c, p = make(name, family, dtype, shards, prefix, tied)
        esize = {"F32": 4, "F16": 2, "BF16": 2}[dtype]
        weights = sum(v.size for v in p.values()) * esize
        C = c.get("n_embd", c.get("hidden_size"))
        units = c.get("n_layer", c.get("num_hidden_layers")) + 2
        # Each unit's slice may end inside a transposed (Conv1D) tensor, whose whole rows are read
        # (at most 4C elements on each side), and is rounded up by at most N - 1 elements.
        slack = units * (2 * 4 * C + N) * esize if family == "gpt2" else units * N * esize
        r = run("train", "--init-from", os.path.join(work, name), "--ranks", str(N), "--stage", "3", "--steps", "1",
                "--data", TEXT, "--sample", "0", "--set", "train_micro_batch_size_per_gpu=1")
        if f"ZeRO stage 3, {N} ranks (mpi)" not in r.stdout:
            print(f"FAIL: not a run of {N} MPI ranks at stage 3:\n{r.stdout}")
            sys.exit(1)
        rank0, most, total = bytes_read(r.stdout)
        print(f"{name}: weights {weights} bytes; rank 0 read {rank0}, max {most} (share {weights / N:.0f} + slack {slack}), total {total}")
        if not (most <= weights / N + slack and total >= weights and total <= weights + N * slack and most < weights / 2):
            print("FAIL: a rank read more than its share")
            sys.exit(1)
    print("ok: at stage 3 each rank read its share of the weights")


def check_stages():
    """One step at learning rate 0 leaves the loaded weights as they are: their SHA-256 in zero's
    layout order (every stage, 1-3 ranks, offload) is that of the file's values in that order."""
    text = os.path.join(work, "text.txt")
    open(text, "wb").write(open(TEXT, "rb").read()[:2000])
    # gpt2_wide: Conv1D weights of 4.3M elements, beyond the 4M that zero reads at a time, so a
    # transposed tensor is read in pieces (at stage 3 on 2 ranks only: the slowest to run).
    for name, family, dtype, shards, prefix, tied in [DIRS[3], DIRS[2], ("gpt2_wide", "gpt2", "BF16", 1, "transformer.", False)]:
        if name == "gpt2_wide":
            c = dict(hf.GPT2, n_embd=1040, n_layer=1, n_head=8)
            p = hf.write_dir(os.path.join(work, name), hf.gpt2_config(c), hf.gpt2_tensors(c, np.random.default_rng(2)), dtype)
        else:
            _, p = make(name, family, dtype, shards, prefix, tied)
        # zero's order is the files' here (hf_dirs writes them so); Conv1D weights transposed back.
        conv1d = lambda k: family == "gpt2" and k.endswith(".weight") and p[k].ndim == 2 and "wte" not in k and "wpe" not in k
        want = hashlib.sha256(b"".join((p[k].T if conv1d(k) else p[k]).astype("<f4").tobytes() for k in p)).hexdigest()
        configs = [["--stage", "0"], ["--stage", "1", "--ranks", "2"], ["--stage", "3", "--ranks", "3"],
                   ["--stage", "3", "--ranks", "2", "--offload", "optimizer+param"]]
        for run_args in configs[2:3] if name == "gpt2_wide" else configs:
            out = run("train", "--init-from", os.path.join(work, name), "--steps", "1", "--lr", "0", "--sample", "0", "--comm", "threads",
                      "--set", "train_micro_batch_size_per_gpu=1", "--set", "data.val_fraction=0", "--data", text, *run_args).stdout
            got = re.findall(r"final weights sha256 ([0-9a-f]+)", out)
            if got != [want]:
                print(f"FAIL: {name} {' '.join(run_args)}: weights sha256 {got}, the file's {want}\n{out}")
                sys.exit(1)
        print(f"ok: {name}: the weights every stage loaded are the file's (sha256 {want[:16]})")


def check_roundtrip(gpt2_dir):
    """zero ckpt export --out OUTDIR (a Hugging Face directory, sharded) read back by --init-from:
    zero eval of the directory gives the checkpoint's loss exactly, with the directory's own
    tokenizer where the run had one (GPT-2 BPE: the exported vocab.json and merges.txt)."""
    text = os.path.join(work, "text.txt")
    open(text, "wb").write(open(TEXT, "rb").read()[:2000])
    small = ["--sample", "0", "--steps", "2", "--data", text, "--set", "train_micro_batch_size_per_gpu=1"]
    runs = {"llama": ["--config", os.path.join(HERE, "..", "cli", "llama_small.json")],
            "gpt_bytes": ["--set", "model.n_embd=32", "--set", "model.n_layer=2", "--set", "model.n_ctx=16"],
            "gpt_bpe": ["--tokenizer", gpt2_dir, "--set", "model.vocab_size=50257", "--set", "model.n_embd=8", "--set", "model.n_layer=1",
                        "--set", "model.n_head=2", "--set", "model.n_ctx=16"]}
    for name, model in runs.items():
        ck, out = os.path.join(work, name + ".ck"), os.path.join(work, name + ".hf")
        for d in (ck, out):
            shutil.rmtree(d, ignore_errors=True)
        run("train", *small, *model, "--save", ck)
        run("ckpt", "export", ck, "--out", out, "--max-shard-size", "20KB")
        shards = [f for f in os.listdir(out) if f.endswith(".safetensors")]
        losses = []
        for source in (["--checkpoint", ck], ["--init-from", out]):
            j = os.path.join(work, name + ".json")
            run("eval", *source, "--data", text, "--json", j)
            losses.append(json.load(open(j))["loss"])
        if name == "gpt_bpe" and not os.path.exists(os.path.join(out, "vocab.json")):
            print(f"FAIL: {out} holds no vocab.json")
            sys.exit(1)
        if losses[0] != losses[1] or len(shards) < 2:
            print(f"FAIL: {name}: the checkpoint's loss {losses[0]}, its exported directory's ({len(shards)} shards) {losses[1]}")
            sys.exit(1)
        print(f"ok: {name}: zero eval --init-from of the export ({len(shards)} shards) = the checkpoint's loss {losses[0]}")


def damaged(name, edit):
    """A copy of the good LLaMA directory (one file, F32) with `edit(dir)` applied."""
    d = os.path.join(work, "bad_" + name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(os.path.join(work, "llama_f32"), d)
    edit(d)
    return d


def rewrite_header(d, change):
    """model.safetensors with change(header) applied to its JSON header (the data kept)."""
    path = os.path.join(d, "model.safetensors")
    blob = open(path, "rb").read()
    (n,) = hf.struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    change(header)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    open(path, "wb").write(hf.struct.pack("<Q", len(text)) + text + blob[8 + n:])


def edit_config(d, **keys):
    path = os.path.join(d, "config.json")
    c = json.load(open(path))
    c.update(keys)
    json.dump(c, open(path, "w"))


def check_bad():
    make("llama_f32", "llama", "F32", 1, "", False)
    make("llama_bf16_sharded_tied", "llama", "BF16", 2, "", True)
    make("gpt2_f32", "gpt2", "F32", 1, "transformer.", False)
    q = "model.layers.0.self_attn.q_proj.weight"
    blob_of = lambda d: os.path.join(d, "model.safetensors")
    sharded = os.path.join(work, "bad_shard")
    shutil.rmtree(sharded, ignore_errors=True)
    shutil.copytree(os.path.join(work, "llama_bf16_sharded_tied"), sharded)
    os.remove(os.path.join(sharded, "model-00002-of-00002.safetensors"))
    gpt_relu = os.path.join(work, "bad_gpt_relu")
    shutil.rmtree(gpt_relu, ignore_errors=True)
    shutil.copytree(os.path.join(work, "gpt2_f32"), gpt_relu)
    edit_config(gpt_relu, activation_function="relu")
    wide = os.path.join(work, "wide.json")
    small = json.load(open(os.path.join(HERE, "..", "cli", "llama_small.json")))
    small["model"]["hidden_size"] = 64
    json.dump(small, open(wide, "w"))
    cases = [
        ("architecture", damaged("bert", lambda d: edit_config(d, model_type="bert")), [],
         r'model_type "bert" is not an architecture zero trains: zero trains "gpt2" \(GPT2LMHeadModel\) and "llama"'),
        ("rope_scaling", damaged("rope", lambda d: edit_config(d, rope_scaling={"type": "linear", "factor": 2.0})), [],
         r"config.json: rope_scaling = .* is not supported"),
        ("vocabulary", damaged("vocab", lambda d: edit_config(d, vocab_size=128256)), [],
         r"bad_vocab/config.json: vocab_size 128256 is beyond the 65536 tokens zero's model section allows"),
        ("attention_bias", damaged("bias", lambda d: edit_config(d, attention_bias=True)), [], r"attention_bias = true is not supported"),
        ("gpt2 activation", gpt_relu, [], r'activation_function = "relu" is not supported: zero\'s GPT computes GELU'),
        ("missing tensor", damaged("missing", lambda d: rewrite_header(d, lambda h: h.pop("model.layers.1.mlp.up_proj.weight"))), [],
         r"tensor 'model.layers.1.mlp.up_proj.weight' is missing from .*bad_missing/model.safetensors"),
        ("extra tensor", damaged("extra", lambda d: rewrite_header(d, lambda h: h.__setitem__("model.layers.0.self_attn.q_proj.bias",
                                                                                             {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}))), [],
         r"bad_extra/model.safetensors holds tensor 'model.layers.0.self_attn.q_proj.bias', which the LLaMA of config.json does not have"),
        ("wrong shape", damaged("shape", lambda d: rewrite_header(d, lambda h: h[q].__setitem__("shape", [16, 64]))), [],
         r"bad_shape/model.safetensors: tensor '" + q + r"' has shape \[16, 64\], but the model of config.json needs \[32, 32\]"),
        ("wrong dtype", damaged("dtype", lambda d: rewrite_header(d, lambda h: h[q].update(dtype="I32"))), [],
         r"bad_dtype/model.safetensors: tensor '" + q + r"' is I32; zero reads F32, F16 and BF16"),
        ("missing shard", sharded, [], r"model.safetensors.index.json names the shard model-00002-of-00002.safetensors for tensor '.*', but .* is missing"),
        ("truncated header", damaged("truncated", lambda d: open(blob_of(d), "r+b").truncate(100)), [],
         r"bad_truncated/model.safetensors declares a header of [0-9]+ bytes but the file has only 92 after the length: the file is truncated"),
        ("overlap", damaged("overlap", lambda d: rewrite_header(d, lambda h: h["model.norm.weight"].update(
            data_offsets=[h[q]["data_offsets"][0], h[q]["data_offsets"][0] + 128]))), [], r"bad_overlap/model.safetensors: tensors '.*' and '.*' overlap"),
        ("past the end", damaged("past", lambda d: rewrite_header(d, lambda h: h["model.norm.weight"].update(data_offsets=[10 ** 9, 10 ** 9 + 128]))), [],
         r"bad_past/model.safetensors: tensor 'model.norm.weight' has data_offsets \[1000000000, 1000000128\], past the end of the file"),
        ("huge header", damaged("huge", lambda d: open(blob_of(d), "r+b").write(hf.struct.pack("<Q", 1 << 60))), [],
         r"bad_huge/model.safetensors declares a header of 1152921504606846976 bytes, beyond safetensors' limit"),
        ("shape disagrees (--set)", os.path.join(work, "llama_f32"), ["--set", "model.hidden_size=64"],
         r"model.hidden_size = 64 \(--set model.hidden_size=64\) but .*llama_f32/config.json has hidden_size = 32"),
        ("shape disagrees (--config)", os.path.join(work, "llama_f32"), ["--config", wide],
         r"model.hidden_size = 64 \(--config .*wide.json\) but .*llama_f32/config.json has hidden_size = 32"),
        ("type disagrees (--config)", os.path.join(work, "gpt2_f32"), ["--config", os.path.join(HERE, "..", "cli", "llama_small.json")],
         r'model.type = "llama" \(--config .*llama_small.json\) but .*gpt2_f32/config.json has model_type = "gpt2"'),
    ]
    save = os.path.join(work, "bad_save")
    for what, d, more, regex in cases:
        shutil.rmtree(save, ignore_errors=True)
        r = run("train", "--init-from", d, "--steps", "1", "--sample", "0", "--save", save, "--ranks", "2", *more, ok=False)
        out = r.stdout + r.stderr
        if r.returncode == 0 or not re.search(regex, out) or re.search(r"^step ", out, re.M) or \
                (os.path.isdir(save) and any(f.startswith("step-") for f in os.listdir(save))):
            print(f"FAIL: {what}: exit {r.returncode}; want /{regex}/ and no step, got:\n{out}")
            sys.exit(1)
        print(f"ok: {what}: {out.strip().splitlines()[-1][:200]}")
    print(f"ok: all {len(cases)} bad inputs refused before any step")


def check_resume():
    make("gpt2_f32", "gpt2", "F32", 1, "transformer.", False)
    d = os.path.join(work, "resume")
    env = dict(os.environ, MODEL_ARGS=f"--init-from {os.path.join(work, 'gpt2_f32')}")
    r = subprocess.run([os.path.join(HERE, "..", "cli", "resume_same.sh"), d, zero, "--ranks", "2", "--stage", "3", "--comm", "threads"],
                       env=env, capture_output=True, text=True)
    print(r.stdout, r.stderr)
    if r.returncode != 0:
        sys.exit(1)
    straight, second = (open(os.path.join(d, f)).read() for f in ("straight.txt", "second.txt"))
    if "GPT V=256 T=16 C=32 L=2 H=4" not in straight or not re.search(r"^init-from .*gpt2_f32: ", straight, re.M):
        print("FAIL: the straight run did not start from the directory's GPT-2:\n", straight)
        sys.exit(1)
    # The config key: the same run with model.init_from instead of the flag ends with the same weights.
    by_key = run("train", "--sample", "0", "--set", f"model.init_from={os.path.join(work, 'gpt2_f32')}", "--set", "steps_per_print=1",
                 "--set", "train_micro_batch_size_per_gpu=2", "--ranks", "2", "--stage", "3", "--comm", "threads", "--steps", "6").stdout
    sha = lambda out: re.findall(r"final weights sha256 [0-9a-f]+", out)
    if not sha(straight) or sha(by_key) != sha(straight):
        print("FAIL: model.init_from does not give --init-from's run:", sha(by_key), sha(straight))
        sys.exit(1)
    if "not read: the weights are --resume's checkpoint's" not in second:
        print("FAIL: the resumed run does not say its weights are the checkpoint's:\n", second)
        sys.exit(1)
    print("ok: a fine-tuning run from --init-from resumes bit-identically")


def check_tokenizer(gpt2_dir):
    """A directory with GPT-2's tokenizer files: used when no tokenizer is given; another one is refused."""
    c = dict(hf.GPT2, vocab_size=50257, n_embd=8, n_layer=1, n_head=2)
    d = os.path.join(work, "gpt2_tokenizer")
    shutil.rmtree(d, ignore_errors=True)
    hf.write_dir(d, hf.gpt2_config(c), hf.gpt2_tensors(c, np.random.default_rng(1)), "BF16")
    for f in ("vocab.json", "merges.txt", "encoder.json", "vocab.bpe"):  # Hugging Face's names or OpenAI's
        if os.path.exists(os.path.join(gpt2_dir, f)):
            shutil.copy(os.path.join(gpt2_dir, f), d)
    text = os.path.join(work, "text.txt")
    open(text, "wb").write(open(TEXT, "rb").read()[:3000])
    common = ["train", "--init-from", d, "--steps", "1", "--sample", "0", "--data", text, "--set", "train_micro_batch_size_per_gpu=1"]
    for given in ([], ["--tokenizer", gpt2_dir]):
        out = run(*common, *given).stdout
        if not re.search(r"^init-from: .*gpt2_tokenizer, the model of .*config.json; tokenizer GPT-2 BPE \(50257 tokens\)", out, re.M):
            print(f"FAIL: the run {given} did not tokenize with the directory's GPT-2 BPE:\n{out}")
            sys.exit(1)
    r = run(*common, "--tokenizer", "bytes", ok=False)
    want = r"--tokenizer is bytes .* but the --init-from directory .*gpt2_tokenizer brings its own tokenizer, GPT-2 BPE"
    if r.returncode == 0 or not re.search(want, r.stdout + r.stderr):
        print(f"FAIL: want /{want}/, got exit {r.returncode}:\n{r.stdout}{r.stderr}")
        sys.exit(1)
    print("ok: the directory's tokenizer is used; the same files given are accepted; another tokenizer is refused")


{"roundtrip": lambda: check_roundtrip(sys.argv[4]), "stages": check_stages, "resume": check_resume, "tokenizer": lambda: check_tokenizer(sys.argv[4]), "loss": check_loss, "identity": check_identity, "bytes": check_bytes, "bad": check_bad}[mode]()
