#!/usr/bin/env node
// Hearth's Vulkan shaders against llama.cpp's Vulkan build (the npm prebuilt) on the same device
// and GGUF files, side by side (A B A B): prompt and generation tokens per second with every layer
// on the device, and ours/theirs per figure (median of the pairs). On lavapipe (a CPU Vulkan
// device) the absolute numbers say little, but the ratio shows how much work our shaders waste.
// Environment: HEARTH_BIN (folder with hearth-cli), REF_HARNESS (the reference's setup folder),
// MODELS (space-separated GGUF paths), DEVICE (default vulkan:0), PAIRS (2), PP (64), TG (32),
// JSON_OUT (file for the results), REF_GPU_BENCH (a built client of llama.cpp; default: built here).
import {execFileSync} from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const env = process.env;
const bin = env.HEARTH_BIN;
const harness = env.REF_HARNESS;
const models = (env.MODELS || "").split(/\s+/).filter(Boolean);
const device = env.DEVICE || "vulkan:0";
const pairs = Number(env.PAIRS || 2);
const pp = Number(env.PP || 64), tg = Number(env.TG || 32);

const median = (v) => {
    const s = [...v].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function ours(model) {
    const out = execFileSync(path.join(bin, "hearth-cli"),
        ["bench", model, "-p", String(pp), "-n", String(tg), "--reps", "1", "--device", device, "--json"],
        {encoding: "utf8", stdio: ["ignore", "pipe", "inherit"]});
    const j = JSON.parse(out);
    return {pp: j.pp_tok_s, tg: j.tg_tok_s, promptTokens: pp};
}

// llama.cpp through our client of its library (bench/ref_gpu_bench.cpp, as scripts/gpu-check.sh
// uses it), built here once against the reference's Vulkan build: the same number of prompt
// tokens as ours (a text prompt would tokenize to another count), one warm-up, then one timed run.
const vkLibs = path.join(harness, "node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan");
let refBench = env.REF_GPU_BENCH;
function buildRefBench() {
    const out = path.join(fs.mkdtempSync("/tmp/hearth-vk-vs-"), "ref-gpu-bench");
    const src = path.join(harness, "llama.cpp-src");
    const libs = fs.readdirSync(vkLibs).filter((f) => /^libllama.*\.so$|^libggml(\..*)?\.so$|^libggml-base\.so$/.test(f))
        .map((f) => path.join(vkLibs, f));
    execFileSync("g++", ["-O2", "-std=c++17", `-I${src}/include`, `-I${src}/ggml/include`,
                         path.join(path.dirname(new URL(import.meta.url).pathname), "ref_gpu_bench.cpp"), "-o", out,
                         ...libs, `-Wl,-rpath,${vkLibs}`], {stdio: ["ignore", "inherit", "inherit"]});
    return out;
}

function theirs(model) {
    refBench ??= buildRefBench();
    // Without GGML_VK_VISIBLE_DEVICES llama.cpp skips CPU-type Vulkan devices (lavapipe).
    const out = execFileSync(refBench, ["-m", model, "-p", String(pp), "-n", String(tg), "-r", "1",
                                        "--backend-dir", vkLibs],
        {encoding: "utf8", stdio: ["ignore", "pipe", "ignore"],
         env: {...env, GGML_VK_VISIBLE_DEVICES: env.GGML_VK_VISIBLE_DEVICES ?? device.replace(/^vulkan:/, "")}});
    const j = JSON.parse(out.trim().split("\n").pop());
    if (!/Vulkan/.test(j.gpus || "")) throw new Error(`the reference ran on ${j.gpus}, not Vulkan`);
    return {pp: j.pp, tg: j.tg, promptTokens: pp};
}

const rows = [];
for (const model of models) {
    const a = [], b = [];
    for (let i = 0; i < pairs; i++) {
        a.push(ours(model));
        b.push(theirs(model));
    }
    const r = {
        model: path.basename(model), device,
        pp_ours: median(a.map((x) => x.pp)), pp_theirs: median(b.map((x) => x.pp)),
        pp_ratio: median(a.map((x, i) => x.pp / b[i].pp)),
        tg_ours: median(a.map((x) => x.tg)), tg_theirs: median(b.map((x) => x.tg)),
        tg_ratio: median(a.map((x, i) => x.tg / b[i].tg)),
        prompt_tokens_ours: pp, prompt_tokens_theirs: b[0].promptTokens,
    };
    rows.push(r);
    console.log(`${r.model.padEnd(28)} ${device}  pp ${r.pp_ours.toFixed(1).padStart(7)} vs ${r.pp_theirs.toFixed(1).padStart(7)} = ${r.pp_ratio.toFixed(2)}x` +
                `   tg${tg} ${r.tg_ours.toFixed(1).padStart(6)} vs ${r.tg_theirs.toFixed(1).padStart(6)} = ${r.tg_ratio.toFixed(2)}x` +
                `   (prompt ${pp} vs ${r.prompt_tokens_theirs} tokens)`);
}
console.log("ratios are ours / llama.cpp's Vulkan build, median over A B pairs, every layer on the device");
if (env.JSON_OUT) fs.writeFileSync(env.JSON_OUT, JSON.stringify({rows}, null, 2));
