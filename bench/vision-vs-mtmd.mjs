#!/usr/bin/env node
// Hearth's vision encoder against llama.cpp's mtmd on the same projector and image, side by side:
// the time to encode one image (preprocessing included on our side; mtmd's encode call on
// theirs), pairs of runs alternating A B, B A, in an ISA mode as bench/vs-llamacpp.mjs has them
// (native, or avx2: Hearth with HEARTH_CPU_ISA=avx2 and llama.cpp with only its haswell variant).
// Prints each run, the medians and theirs/ours (above 1: Hearth is faster).
// Env: HEARTH_BIN (hearth-cli's folder), HEARTH_REF (the reference folder), HEARTH_TEST_DATA;
// MODEL and MMPROJ (default: a Gemma 3 4B-shaped projector and a 1-layer text model synthesized
// into a temporary folder), SIZE (default 1024x768), THREADS (2), PAIRS (2), ISA (native).
import {execFileSync, spawnSync} from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";

const env = process.env;
const here = path.dirname(new URL(import.meta.url).pathname);
const bin = env.HEARTH_BIN || path.join(here, "../build/release/bin");
const ref = env.HEARTH_REF || path.join(os.homedir(), ".cache/hearth-ref");
const data = env.HEARTH_TEST_DATA || path.resolve(here, "../../shared");
const threads = Number(env.THREADS || 2), pairs = Number(env.PAIRS || 2);
const [width, height] = (env.SIZE || "1024x768").split("x").map(Number);
const isa = env.ISA || "native";
if (!["native", "avx2"].includes(isa)) throw new Error(`ISA=${isa}: expected native or avx2`);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-vision-bench-"));

let model = env.MODEL, mmproj = env.MMPROJ;
if (!model || !mmproj) {
    model = path.join(dir, "gemma3-4b-1layer.gguf");
    mmproj = path.join(dir, "gemma3-4b-mmproj.gguf");
    execFileSync(path.join(bin, "hearth-cli"), ["synth", "--preset", "gemma3-4b", "--layers", "1", "--type", "Q4_0",
        "--vocab", path.join(data, "models/ggml-vocab-llama-spm.gguf"), "-o", model, "--mmproj", mmproj],
        {stdio: ["ignore", "ignore", "inherit"]});
}
const tool = execFileSync("bash", [path.join(here, "../tests/tools/build_ref_mtmd.sh"), ref], {encoding: "utf8"})
    .trim().split("\n").pop();
let refEnv = {...process.env};
if (isa === "avx2") {
    const out = execFileSync("bash", [path.join(data, "tools/reference/backend-dir.sh"), "haswell",
                                      fs.mkdtempSync(path.join(os.tmpdir(), "hearth-vs-backend-")), ref], {encoding: "utf8"});
    refEnv.HEARTH_REF_BACKEND_DIR = out.trim().split("\n").pop();
}

// The picture: gradients and a pattern, as raw RGB for mtmd and as a PNG for hearth-cli.
const rgb = Buffer.alloc(width * height * 3);
for (let y = 0; y < height; ++y)
    for (let x = 0; x < width; ++x) {
        const i = (y * width + x) * 3;
        rgb[i] = (x * 7 + y) % 256;
        rgb[i + 1] = (y * 3) % 256;
        rgb[i + 2] = (x ^ y) % 256;
    }
const rgbPath = path.join(dir, "picture.rgb"), pngPath = path.join(dir, "picture.png");
fs.writeFileSync(rgbPath, rgb);
const crcTable = Array.from({length: 256}, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
});
const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
};
const chunk = (type, body) => {
    const len = Buffer.alloc(4), sum = Buffer.alloc(4);
    len.writeUInt32BE(body.length);
    const tb = Buffer.concat([Buffer.from(type, "latin1"), body]);
    sum.writeUInt32BE(crc(tb));
    return Buffer.concat([len, tb, sum]);
};
const ihdr = Buffer.alloc(13);
ihdr.writeUInt32BE(width, 0);
ihdr.writeUInt32BE(height, 4);
ihdr[8] = 8;
ihdr[9] = 2;
const rows = Buffer.alloc((width * 3 + 1) * height);
for (let y = 0; y < height; ++y) rgb.copy(rows, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
fs.writeFileSync(pngPath, Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr),
                                         chunk("IDAT", zlib.deflateSync(rows)), chunk("IEND", Buffer.alloc(0))]));

const cpuName = (fs.readFileSync("/proc/cpuinfo", "utf8").match(/^model name\s*:\s*(.*)$/m) || [, "?"])[1];
console.log(`CPU: ${cpuName}; ISA mode ${isa}; ${threads} threads; image ${width}x${height}; projector ${mmproj}`);

function ours() {
    const out = execFileSync(path.join(bin, "hearth-cli"),
        ["embed-image", "--mmproj", mmproj, pngPath, "--threads", String(threads)],
        {encoding: "utf8", stdio: ["ignore", "pipe", "inherit"],
         env: isa === "native" ? process.env : {...process.env, HEARTH_CPU_ISA: isa}});
    return Number(out.match(/embeddings of \d+ in ([\d.]+) ms/)[1]);
}
function theirsMs() {
    const r = spawnSync(tool, [model, mmproj, rgbPath, String(width), String(height), path.join(dir, "ref.f32"), "1",
                               String(threads)], {encoding: "utf8", env: refEnv});
    const m = (r.stderr || "").match(/encode_ms ([\d.]+)/);
    if (r.status !== 0 || !m) throw new Error(`ref_mtmd_embed failed: ${(r.stderr || "").slice(-2000)}`);
    return Number(m[1]);
}

const median = (v) => {
    const s = [...v].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const a = [], b = [];
for (let p = 0; p < pairs; ++p) {
    const order = p % 2 ? ["theirs", "ours"] : ["ours", "theirs"];
    for (const who of order) {
        const ms = who === "ours" ? ours() : theirsMs();
        (who === "ours" ? a : b).push(ms);
        console.log(`pair ${p + 1}: ${who === "ours" ? "Hearth   " : "llama.cpp"} ${ms.toFixed(0)} ms`);
    }
}
const ma = median(a), mb = median(b);
console.log(`median: Hearth ${ma.toFixed(0)} ms (${Math.min(...a).toFixed(0)}-${Math.max(...a).toFixed(0)}), ` +
            `llama.cpp ${mb.toFixed(0)} ms (${Math.min(...b).toFixed(0)}-${Math.max(...b).toFixed(0)}); ` +
            `llama.cpp / Hearth = ${(mb / ma).toFixed(2)}x`);
fs.rmSync(dir, {recursive: true, force: true});
