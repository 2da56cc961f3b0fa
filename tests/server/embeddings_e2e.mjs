// End-to-end check of hearth-server's embeddings with the official clients: the `openai` npm
// client's embeddings.create (its default base64 encoding, floats, several inputs, token ids,
// dimensions, errors) and the `ollama` client's embed / embeddings on stories260K, embeddings
// beside a streamed completion, and — when $HEARTH_REF has llama.cpp (node-llama-cpp) — the
// server's vector for a text against llama.cpp's on a synthesized Qwen3-style file with last-token
// pooling and the Qwen2 BPE vocabulary (tokenization, forward and pooling all in the chain), and
// on synthesized bert (CLS pooling, BGE vocabulary; its chat completions refused) and nomic-bert
// (mean pooling) encoders.
// Exits 77 (skip) when a package or the model is missing.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { skip, check, fail, finish, startServer, requireFiles, npmRequire, storiesModel,
  serverBin, cliBin, dataDir, npmDir, srcDir, stopServer } from './e2e_support.mjs';

const stories = storiesModel;

let OpenAI, Ollama;
try {
  const o = npmRequire('openai');
  OpenAI = o.OpenAI ?? o.default ?? o;
  const l = npmRequire('ollama');
  Ollama = l.Ollama ?? l.default?.Ollama;
  if (!Ollama) throw new Error('no Ollama class in the package');
} catch (e) {
  skip(`the openai and ollama packages are not installed in ${npmDir} (run scripts/install-npm-clients.sh)`);
}
requireFiles(stories, serverBin);


const norm = (v) => Math.sqrt(v.reduce((a, x) => a + x * x, 0));
const maxDiff = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
const cosine = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0) / (norm(a) * norm(b));

const servers = [];
try {
  const s = await startServer(stories, ['--ctx', '512']);
  servers.push(s);
  const client = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'none', maxRetries: 0 });
  const one = await client.embeddings.create({ model: 'stories260K', input: 'Once upon a time' });
  const v = one.data[0].embedding;
  check(one.object === 'list' && one.data.length === 1 && one.data[0].object === 'embedding', 'openai: one input, one embedding');
  check(Array.isArray(v) && v.length === 64, `openai: 64 values (stories260K's width), got ${v.length}`);
  check(Math.abs(norm(v) - 1) < 1e-5, 'openai: the vector is L2-normalized');
  check(one.usage.prompt_tokens === 5 && one.usage.total_tokens === 5, 'openai: usage counts BOS + 4 tokens');
  const floats = await client.embeddings.create({ model: 'stories260K', input: 'Once upon a time', encoding_format: 'float' });
  check(maxDiff(floats.data[0].embedding, v) === 0, 'openai: float and base64 (the client default) give the same vector');
  const ids = await client.embeddings.create({ model: 'stories260K', input: [1, 403, 407, 261, 378] });
  check(maxDiff(ids.data[0].embedding, v) < 1e-6, 'openai: the same ids as token input give the same vector');
  const three = await client.embeddings.create({ model: 'stories260K', input: ['Once upon a time', 'The dog ran.', 'Lily'] });
  check(three.data.length === 3 && three.data.every((d, i) => d.index === i), 'openai: three inputs in order');
  check(maxDiff(three.data[0].embedding, v) < 1e-5, 'openai: batched with others, the first input gives the same vector');
  check(maxDiff(three.data[1].embedding, v) > 1e-2, 'openai: different texts give different vectors');
  const cut = await client.embeddings.create({ model: 'stories260K', input: 'Once upon a time', dimensions: 16 });
  const head = v.slice(0, 16), hn = norm(head);
  check(cut.data[0].embedding.length === 16 && maxDiff(cut.data[0].embedding, head.map((x) => x / hn)) < 1e-5,
        'openai: dimensions 16 is the first 16 values, normalized again');
  for (const [what, input, extra] of [['an empty string', '', {}], ['dimensions beyond the width', 'hi', { dimensions: 65 }],
                                      ['an id outside the vocabulary', [1, 999999], {}]]) {
    try {
      await client.embeddings.create({ model: 'stories260K', input, ...extra });
      check(false, `openai: ${what} is refused`);
    } catch (e) {
      check(e.status === 400 && e.error?.type === 'invalid_request_error', `openai: ${what} is refused (HTTP ${e.status})`);
    }
  }
  // Beside a streamed completion: both finish, vectors unchanged.
  const stream = client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 64, stream: true });
  const many = Promise.all(Array.from({ length: 8 }, () => client.embeddings.create({ model: 'stories260K', input: 'Once upon a time' })));
  let text = '';
  for await (const chunk of await stream) text += chunk.choices[0]?.text ?? '';
  const results = await many;
  check(text.length > 0 && results.every((r) => maxDiff(r.data[0].embedding, v) < 1e-5),
        'openai: 8 concurrent embeddings beside a streamed completion give the same vector');

  const ollama = new Ollama({ host: s.base });
  const oe = await ollama.embed({ model: 'stories260K', input: ['Once upon a time', 'Lily'] });
  check(oe.model === 'stories260K' && oe.embeddings.length === 2 && oe.embeddings[0].length === 64, 'ollama: embed gives two vectors of 64');
  check(maxDiff(oe.embeddings[0], v) < 1e-5, 'ollama: embed equals the OpenAI endpoint');
  check(oe.prompt_eval_count > 0 && typeof oe.total_duration === 'number', 'ollama: prompt_eval_count and total_duration');
  const legacy = await ollama.embeddings({ model: 'stories260K', prompt: 'Once upon a time' });
  const ln = norm(legacy.embedding);
  check(legacy.embedding.length === 64 && maxDiff(legacy.embedding.map((x) => x / ln), v) < 1e-5,
        'ollama: legacy embeddings is the same vector before normalization');
  await stopServer(s.server);
  servers.pop();

  // Against llama.cpp: a Qwen3-style file, last-token pooling, Qwen2 BPE vocabulary.
  const ref = process.env.HEARTH_REF;
  if (!ref) {
    console.log('note: HEARTH_REF is not set: the comparison with llama.cpp is skipped');
  } else {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hearth-embed-'));
    try {
      const q = path.join(dir, 'qwen3-tiny-last.gguf');
      execFileSync(cliBin, ['synth', '--preset', 'qwen3-tiny', '--type', 'F32', '--pooling', '3', '--vocab',
                            path.join(dataDir, 'models', 'ggml-vocab-qwen2.gguf'), '-o', q], { stdio: 'ignore' });
      const text = 'Hearth computes embeddings, 2026 edition: ünïcode too!';
      const theirs = JSON.parse(execFileSync('node', [path.join(srcDir, 'tests', 'tools', 'ref_embed.mjs'), q, '--text', text],
                                             { env: { ...process.env, HEARTH_REF: ref } }).toString());
      const qs = await startServer(q, ['--ctx', '512']);
      servers.push(qs);
      const qc = new OpenAI({ baseURL: `${qs.base}/v1`, apiKey: 'none', maxRetries: 0 });
      const ours = (await qc.embeddings.create({ model: 'q', input: text, encoding_format: 'float' }));
      const tn = norm(theirs.vector), t = theirs.vector.map((x) => x / tn), o = ours.data[0].embedding;
      const c = cosine(o, t), d = maxDiff(o, t);
      check(ours.usage.prompt_tokens === theirs.tokens.length, `llama.cpp: same token count (${theirs.tokens.length})`);
      check(c >= 0.9999 && d <= 2e-3, `llama.cpp: qwen3-tiny last pooling, cosine ${c.toFixed(8)}, max |diff| ${d.toExponential(2)}`);
      await stopServer(qs.server);
      servers.pop();

      // A bert encoder (bert-tiny, CLS pooling, the BGE WordPiece vocabulary): embeddings agree
      // with llama.cpp's, on both endpoints; chat is refused with a 400 naming the reason.
      const b = path.join(dir, 'bert-tiny.gguf');
      execFileSync(cliBin, ['synth', '--preset', 'bert-tiny', '--type', 'F32', '--vocab',
                            path.join(ref, 'llama.cpp-src', 'models', 'ggml-vocab-bert-bge.gguf'), '-o', b], { stdio: 'ignore' });
      const btext = 'What is the capital of France? Paris, of course.';
      const bref = JSON.parse(execFileSync('node', [path.join(srcDir, 'tests', 'tools', 'ref_embed.mjs'), b, '--text', btext],
                                           { env: { ...process.env, HEARTH_REF: ref } }).toString());
      const bs = await startServer(b, ['--ctx', '512']);
      servers.push(bs);
      const bc = new OpenAI({ baseURL: `${bs.base}/v1`, apiKey: 'none', maxRetries: 0 });
      const bo = (await bc.embeddings.create({ model: 'b', input: btext, encoding_format: 'float' })).data[0].embedding;
      const bn = norm(bref.vector), bt = bref.vector.map((x) => x / bn);
      const bcos = cosine(bo, bt), bd = maxDiff(bo, bt);
      check(bcos >= 0.9999 && bd <= 2e-3, `llama.cpp: bert-tiny CLS pooling, cosine ${bcos.toFixed(8)}, max |diff| ${bd.toExponential(2)}`);
      const bollama = new Ollama({ host: bs.base });
      const bol = await bollama.embed({ model: 'b', input: btext });
      check(maxDiff(bol.embeddings[0], bo) < 1e-5, 'bert: ollama embed equals the OpenAI endpoint');
      const bshow = await bollama.show({ model: 'b' });
      check(JSON.stringify(bshow.capabilities) === '["embedding"]', `bert: ollama show lists the embedding capability only (${JSON.stringify(bshow.capabilities)})`);
      try {
        await bc.chat.completions.create({ model: 'b', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
        check(false, 'bert: chat completions are refused');
      } catch (e) {
        check(e.status === 400 && /embeddings only/.test(e.message), `bert: chat completions are refused (HTTP ${e.status}: ${e.message})`);
      }
      await stopServer(bs.server);
      servers.pop();

      // A nomic-bert encoder (nomic-bert-tiny: RoPE, fused q/k/v, SwiGLU; mean pooling) through
      // the same endpoint, unchanged: its vector agrees with llama.cpp's.
      const nb = path.join(dir, 'nomic-bert-tiny.gguf');
      execFileSync(cliBin, ['synth', '--preset', 'nomic-bert-tiny', '--type', 'F32', '--vocab',
                            path.join(ref, 'llama.cpp-src', 'models', 'ggml-vocab-bert-bge.gguf'), '-o', nb], { stdio: 'ignore' });
      const nref = JSON.parse(execFileSync('node', [path.join(srcDir, 'tests', 'tools', 'ref_embed.mjs'), nb, '--text', btext],
                                           { env: { ...process.env, HEARTH_REF: ref } }).toString());
      const ns = await startServer(nb, ['--ctx', '512']);
      servers.push(ns);
      const nc = new OpenAI({ baseURL: `${ns.base}/v1`, apiKey: 'none', maxRetries: 0 });
      const no = (await nc.embeddings.create({ model: 'n', input: btext, encoding_format: 'float' })).data[0].embedding;
      const nn = norm(nref.vector), nt = nref.vector.map((x) => x / nn);
      const ncos = cosine(no, nt), nd = maxDiff(no, nt);
      check(ncos >= 0.9999 && nd <= 2e-3, `llama.cpp: nomic-bert-tiny mean pooling, cosine ${ncos.toFixed(8)}, max |diff| ${nd.toExponential(2)}`);
      await stopServer(ns.server);
      servers.pop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
} catch (e) {
  fail(e);
} finally {
  for (const s of servers) await stopServer(s.server);
}
finish();
