// llama.cpp's embedding of a text or a token list (the oracle for tests/model/test_embeddings.cpp),
// through node-llama-cpp's embedding context, printed as one JSON line:
//   {"tokens": [...], "vector": [...], "nEmbd": N}
// `tokens` are the ids llama.cpp evaluated (node-llama-cpp adds the vocabulary's BOS, and its
// EOS/SEP where the vocabulary appends one); `vector` is llama_get_embeddings_seq (pooled as the
// file's <arch>.pooling_type says) or, for pooling "none" (files without the key), the last
// token's row — neither is normalized.
//
//   node tests/tools/ref_embed.mjs MODEL.gguf --text "Hello world"
//   node tests/tools/ref_embed.mjs MODEL.gguf --tokens 1,403,407
// node-llama-cpp is imported from $HEARTH_REF (or $REF_HARNESS), the folder setup.sh made.
import {importNodeLlamaCpp} from "./node_llama_cpp.mjs";

const args = process.argv.slice(2);
const model = args[0];
let text = null, tokens = null, ctxSize = 512;
for (let i = 1; i < args.length; i++) {
    if (args[i] === "--text") text = args[++i];
    else if (args[i] === "--tokens") tokens = args[++i].split(",").filter((s) => s !== "").map(Number);
    else if (args[i] === "--ctx") ctxSize = Number(args[++i]);
    else throw new Error(`unknown option ${args[i]}`);
}
if (!model || (text == null && tokens == null)) {
    console.error("usage: ref_embed.mjs MODEL.gguf (--text T | --tokens 1,2,3) [--ctx N]");
    process.exit(2);
}

const {getLlama, LlamaLogLevel} = await importNodeLlamaCpp();
const llama = await getLlama({gpu: false, logLevel: LlamaLogLevel.error});
const m = await llama.loadModel({modelPath: model, gpuLayers: 0});
const ctx = await m.createEmbeddingContext({contextSize: ctxSize, threads: 1});
// The ids llama.cpp will evaluate: ours must be the same list.
const input = tokens ?? m.tokenize(text, false);
const evaluated = [...input];
ctx._prepareInput(evaluated);
const e = await ctx.getEmbeddingFor(tokens ?? text);
process.stdout.write(JSON.stringify({tokens: evaluated, vector: Array.from(e.vector), nEmbd: e.vector.length}) + "\n");
await ctx.dispose();
await m.dispose();
await llama.dispose();
