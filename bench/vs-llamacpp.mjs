#!/usr/bin/env node
// Hearth against llama.cpp (the npm prebuilt) on the same GGUF files, side by side, in an ISA
// mode (below): pp512 and tg128 at 1 and 2 threads, pairs of runs alternating A B, B A; prints ours/theirs per figure
// (median of the pairs), peak RSS, and decode speed as a fraction of the bandwidth limit (bytes
// read per token / read bandwidth measured here). Run through bench/vs-llamacpp, which builds and
// sets everything up.
import {execFileSync} from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const env = process.env;
const bin = env.HEARTH_BIN;             // folder with hearth-cli and bench_membw
const ref = env.HEARTH_REF;             // reference harness folder (setup.sh output)
const models = (env.MODELS || "").split(/\s+/).filter(Boolean);
const threadsList = (env.THREADS || "1 2").split(/\s+/).map(Number);
const pairs = Number(env.PAIRS || 2);
const pp = Number(env.PP || 512), tg = Number(env.TG || 128);
// REF_MMAP=0: llama.cpp reads the weights into memory instead of mapping the file (where the
// kernel reclaims cold file pages, a mapped model's decode can slow several times).
const refMmap = env.REF_MMAP ?? "";
const fullBackendDir = path.join(ref, "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64");
// ISA: the instruction sets both engines may use, as on a user's machine of that kind, whatever
// this one is: avx2 (Hearth with HEARTH_CPU_ISA=avx2, llama.cpp with only its haswell CPU
// variant), avxvnni (alderlake), avx512 (Hearth's AVX-512 kernels; llama.cpp picks its best
// variant), or native (the default: each engine's own choice for this CPU).
const isa = env.ISA || "native";
const refVariants = {avx2: "haswell", avxvnni: "alderlake"};
if (!["native", "avx2", "avxvnni", "avx512"].includes(isa)) throw new Error(`ISA=${isa}: expected native, avx2, avxvnni or avx512`);
let backendDir = fullBackendDir;
if (refVariants[isa]) {
    const data = env.HEARTH_TEST_DATA || path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../shared");
    const out = execFileSync("bash", [path.join(data, "tools/reference/backend-dir.sh"), refVariants[isa],
                                      fs.mkdtempSync("/tmp/hearth-vs-backend-"), ref], {encoding: "utf8"});
    backendDir = out.trim().split("\n").pop();
}
const cpuName = (fs.readFileSync("/proc/cpuinfo", "utf8").match(/^model name\s*:\s*(.*)$/m) || [, "?"])[1];
console.log(`CPU: ${cpuName}; ISA mode ${isa}: Hearth ${isa === "native" ? "at its detected level" : `HEARTH_CPU_ISA=${isa}`}, ` +
            `llama.cpp ${refVariants[isa] ? `with libggml-cpu-${refVariants[isa]}.so only` : "with every CPU variant (it loads the best this CPU runs)"}`);

const median = (v) => {
    const s = [...v].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function ours(model, threads) {
    const out = execFileSync(path.join(bin, "hearth-cli"),
        ["bench", model, "-p", String(pp), "-n", String(tg), "--threads", String(threads), "--reps", "1", "--json"],
        {encoding: "utf8", stdio: ["ignore", "pipe", "inherit"],
         env: isa === "native" ? process.env : {...process.env, HEARTH_CPU_ISA: isa}});
    const j = JSON.parse(out);
    return {pp: j.pp_tok_s, tg: j.tg_tok_s, rssMiB: j.max_rss_kib / 1024};
}

function theirs(model, threads) {
    const json = path.join(fs.mkdtempSync("/tmp/hearth-vs-"), "ref.json");
    execFileSync(path.join(ref, "ref-llama-bench"),
        ["-m", model, "-p", String(pp), "-n", String(tg), "-t", String(threads), "-r", "1",
         "--backend-dir", backendDir, "--json", json, ...(refMmap === "" ? [] : ["--mmap", refMmap])],
        {encoding: "utf8", stdio: ["ignore", "ignore", "inherit"]});
    const j = JSON.parse(fs.readFileSync(json, "utf8"));
    return {pp: j.pp.median, tg: j.tg.median, rssMiB: j.max_rss_kib / 1024};
}

// Bytes a decode step reads: every tensor but the token embedding, of which one row is read, (of
// the experts' tensors, the used experts' share),
// unless the model has no output.weight: then the embedding is also the output projection (tied
// embeddings, as in llama3.2-1b and qwen2.5-0.5b) and is read in full every step.
function decodeBytes(model) {
    const out = execFileSync(path.join(bin, "hearth-cli"), ["inspect", model, "--json"], {encoding: "utf8"});
    const j = JSON.parse(out);
    const tensors = j.tensors || [];
    const tied = !tensors.some((t) => t.name === "output.weight");
    // Mixture of experts: a token reads its experts' share of each *_exps tensor.
    const hp = j.hyperparameters || {};
    const share = hp.expert_count > 0 ? hp.expert_used_count / hp.expert_count : 1;
    let total = 0;
    for (const t of tensors)
        if (tied || t.name !== "token_embd.weight") total += Number(t.bytes || 0) * (t.name.includes("_exps.") ? share : 1);
    return total > 0 ? total : fs.statSync(model).size;
}

// Read bandwidth (GB/s) at t threads, median of 5 repetitions. The machine's bandwidth drifts
// over minutes (other tenants), so it is measured beside every A B pair, and each row's limit
// uses the samples taken during its own pairs.
const membw = (t) => Number(execFileSync(path.join(bin, "bench_membw"), [String(t), "5"], {encoding: "utf8"}).trim());
const bwSamples = Object.fromEntries(threadsList.map((t) => [t, []]));

const rows = [];
for (const model of models) {
    const bytes = decodeBytes(model);
    for (const t of threadsList) {
        const a = [], b = [], bw = [];
        for (let i = 0; i < pairs; i++) {
            // A B, then B A: whichever runs first in a pair is not always the same engine (runs of
            // one engine A B A B on this host measured the first of each pair up to ~10% faster).
            bw.push(membw(t));
            if (i % 2 === 0) {
                a.push(ours(model, t));
                b.push(theirs(model, t));
            } else {
                b.push(theirs(model, t));
                a.push(ours(model, t));
            }
            bw.push(membw(t));
        }
        bwSamples[t].push(...bw);
        const ppRatio = median(a.map((x, i) => x.pp / b[i].pp));
        const tgRatio = median(a.map((x, i) => x.tg / b[i].tg));
        const limit = median(bw) * 1e9 / bytes;
        rows.push({
            model: path.basename(model), threads: t,
            pp_ours: median(a.map((x) => x.pp)), pp_theirs: median(b.map((x) => x.pp)), pp_ratio: ppRatio,
            tg_ours: median(a.map((x) => x.tg)), tg_theirs: median(b.map((x) => x.tg)), tg_ratio: tgRatio,
            bandwidth_gbs: median(bw), tg_limit: limit, tg_ours_of_limit: median(a.map((x) => x.tg)) / limit,
            tg_theirs_of_limit: median(b.map((x) => x.tg)) / limit,
            rss_ours_mib: Math.max(...a.map((x) => x.rssMiB)), rss_theirs_mib: Math.max(...b.map((x) => x.rssMiB)),
        });
        const r = rows[rows.length - 1];
        console.log(`${r.model.padEnd(28)} t=${t}  pp${pp} ${r.pp_ours.toFixed(1).padStart(7)} vs ${r.pp_theirs.toFixed(1).padStart(7)} = ${r.pp_ratio.toFixed(2)}x` +
                    `   tg${tg} ${r.tg_ours.toFixed(1).padStart(6)} vs ${r.tg_theirs.toFixed(1).padStart(6)} = ${r.tg_ratio.toFixed(2)}x` +
                    ` (${(100 * r.tg_ours_of_limit).toFixed(0)}% / ${(100 * r.tg_theirs_of_limit).toFixed(0)}% of ${r.tg_limit.toFixed(1)} tok/s limit)` +
                    `   RSS ${r.rss_ours_mib.toFixed(0)} vs ${r.rss_theirs_mib.toFixed(0)} MiB`);
    }
}
const bandwidth = Object.fromEntries(threadsList.map((t) => [t, median(bwSamples[t])]));
console.log(`read bandwidth (GB/s, median of the samples beside the pairs): ${Object.entries(bandwidth).map(([t, g]) => `${t} thread(s) ${g.toFixed(1)}`).join(", ")}`);
console.log("ratios are ours / llama.cpp, median over A B pairs; limit = bandwidth / bytes read per token");
if (env.JSON_OUT) fs.writeFileSync(env.JSON_OUT, JSON.stringify({cpu: cpuName, isa_mode: isa, reference_variant: refVariants[isa] || "auto", bandwidth, rows}, null, 2));
