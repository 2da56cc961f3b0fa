#!/usr/bin/env node
// Times llama.cpp's tokenizer (through node-llama-cpp, found via $REF_HARNESS) on a text file:
// prints the best of REPS encode times in ms and the token count, like bench_tokenizer.
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";
import path from "node:path";
import fs from "node:fs";

const [vocab, textFile, repsArg] = process.argv.slice(2);
if (!vocab || !textFile) {
    console.error("usage: ref_tokenizer_time.mjs VOCAB.gguf TEXT_FILE [REPS]");
    process.exit(2);
}
const req = createRequire(path.join(path.resolve(process.env.REF_HARNESS || "."), "package.json"));
const {getLlama, LlamaLogLevel} = await import(pathToFileURL(req.resolve("node-llama-cpp")).href);
const llama = await getLlama({gpu: false, build: "never", skipDownload: true, logLevel: LlamaLogLevel.error,
                              logger: () => {}});
const model = await llama.loadModel({modelPath: vocab, vocabOnly: true});
const text = fs.readFileSync(textFile, "utf8");
let best = Infinity, count = 0;
for (let r = 0; r < Number(repsArg || 3); r++) {
    const t0 = process.hrtime.bigint();
    const ids = model.tokenize(text, false);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    count = ids.length;
    best = Math.min(best, ms);
}
console.log(`${best.toFixed(1)} ${count}`);
await model.dispose();
await llama.dispose();
