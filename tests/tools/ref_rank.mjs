// llama.cpp's reranking scores (the oracle for reranker files): node-llama-cpp's ranking context
// scores each document against the query and prints one JSON line:
//   {"scores": [...], "tokens": [[...], ...]}
// `scores` are the relevance probabilities (the sigmoid of the head's first output, as
// node-llama-cpp reports them); `tokens` the ids each pair evaluated: BOS, the query, EOS, SEP,
// the document, EOS (those the vocabulary has).
//
//   node tests/tools/ref_rank.mjs MODEL.gguf --query "what is a panda?" --doc "hi" --doc "The giant panda ..."
// node-llama-cpp is imported from $HEARTH_REF (or $REF_HARNESS), the folder setup.sh made.
import {importNodeLlamaCpp} from "./node_llama_cpp.mjs";

const args = process.argv.slice(2);
const model = args[0];
let query = null;
const docs = [];
for (let i = 1; i < args.length; i++) {
    if (args[i] === "--query") query = args[++i];
    else if (args[i] === "--doc") docs.push(args[++i]);
    else throw new Error(`unknown option ${args[i]}`);
}
if (!model || query == null || docs.length === 0) {
    console.error("usage: ref_rank.mjs MODEL.gguf --query Q --doc D [--doc D ...]");
    process.exit(2);
}

const {getLlama, LlamaLogLevel} = await importNodeLlamaCpp();
const llama = await getLlama({gpu: false, logLevel: LlamaLogLevel.error});
const m = await llama.loadModel({modelPath: model, gpuLayers: 0});
const ctx = await m.createRankingContext({contextSize: 512, threads: 1});
const q = m.tokenize(query, false, "trimLeadingSpace");
const tokens = docs.map((d) => ctx._getEvaluationInput(q, m.tokenize(d, false, "trimLeadingSpace")));
const scores = await ctx.rankAll(query, docs);
process.stdout.write(JSON.stringify({scores, tokens}) + "\n");
await ctx.dispose();
await m.dispose();
await llama.dispose();
