#!/usr/bin/env python3
"""llama.cpp's perplexity of a model on a text, computed from llama.cpp's own logits (a check of
`hearth-cli perplexity`, not product code): the text is tokenized by hearth-cli (BOS first), cut
into chunks of CTX tokens with BOS as each chunk's first token, each chunk evaluated by the
reference harness tests/model/ref_logits.cpp over libllama, and the second half of each chunk
scored as llama.cpp's perplexity tool does.

usage: llama_perplexity.py HEARTH_CLI REF_LOGITS BACKEND_DIR MODEL.gguf TEXT CTX [CHUNKS]
"""
import math
import os
import struct
import subprocess
import sys
import tempfile


def main():
    cli, harness, backend, model, text_path, ctx = sys.argv[1:7]
    ctx = int(ctx)
    max_chunks = int(sys.argv[7]) if len(sys.argv) > 7 else -1
    text = open(text_path, encoding="utf-8").read()
    ids = [int(t) for t in subprocess.run([cli, "tokenize", model, text, "--add-special"], check=True,
                                          capture_output=True, text=True).stdout.split()]
    bos = ids[0]
    chunks = len(ids) // ctx if max_chunks < 0 else min(max_chunks, len(ids) // ctx)
    first = ctx // 2
    nll = nll2 = 0.0
    count = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.f32")
        for c in range(chunks):
            chunk = ids[c * ctx:(c + 1) * ctx]
            chunk[0] = bos
            subprocess.run([harness, model, backend, out, ",".join(map(str, chunk))], check=True)
            raw = open(out, "rb").read()
            vocab = len(raw) // 4 // ctx
            logits = struct.unpack("<%df" % (ctx * vocab), raw)
            for j in range(first, ctx - 1):
                row = logits[j * vocab:(j + 1) * vocab]
                m = max(row)
                s = sum(math.exp(v - m) for v in row)
                v = -((row[ids[c * ctx + j + 1]] - m) - math.log(s))
                nll += v
                nll2 += v * v
                count += 1
            print("[%d]%.4f," % (c + 1, math.exp(nll / count)), end="", flush=True)
    print()
    mean = nll / count
    var = nll2 / count - mean * mean
    ppl = math.exp(mean)
    print("Final estimate: PPL = %.4f +/- %.5f" % (ppl, math.sqrt(var / (count - 1)) * ppl))


if __name__ == "__main__":
    main()
