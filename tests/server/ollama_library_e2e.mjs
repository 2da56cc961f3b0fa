// hearth-server --models-dir with the official `ollama` npm client: list (with sizes), chat and
// generate by name, ps (most recently used first, expires_at from keep_alive), copy, delete, the
// least recently used model unloaded when --models-max is reached, and keep_alive 0 unloading a
// model. Exits 77 (skip) when the package or the model is missing.
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { check, startServer, requireFiles, ollamaClass, storiesModel, serverBin, fail, finish,
  stopServer } from './e2e_support.mjs';

const Ollama = ollamaClass();
requireFiles(storiesModel, serverBin);

const dir = mkdtempSync(path.join(os.tmpdir(), 'hearth-library-'));
for (const name of ['alpha', 'beta']) copyFileSync(storiesModel, path.join(dir, `${name}.gguf`));

async function expectError(promise, status, what) {
  try {
    await promise;
    check(false, `${what}: refused`);
  } catch (e) {
    check(e.status_code === status, `${what}: HTTP ${e.status_code} ${JSON.stringify(e.error ?? e.message)}`);
  }
}
async function until(what, cond) {
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline) {
    if (await cond()) return check(true, what);
    await new Promise((r) => setTimeout(r, 100));
  }
  check(false, what);
}
const psNames = async (ollama) => (await ollama.ps()).models.map((m) => m.name);

const { server, base, healthy } = await startServer(path.join(dir, 'alpha.gguf'),
  ['--models-dir', dir, '--models-max', '2', '--ctx', '256']);
try {
  check(healthy, '/health answers 200 once alpha (--model) is loaded');
  const ollama = new Ollama({ host: base });
  const list = await ollama.list();
  check(list.models.map((m) => m.name).join() === 'alpha,beta' && list.models.every((m) => m.size > 1000000),
        `list() names both models with their sizes: ${JSON.stringify(list.models.map((m) => [m.name, m.size]))}`);
  check((await psNames(ollama)).join() === 'alpha', 'ps(): alpha, loaded at start');

  const a = await ollama.chat({ model: 'alpha:latest', messages: [{ role: 'user', content: 'Hi' }],
                                options: { num_predict: 4 } });
  check(a.done && a.model === 'alpha:latest', 'chat() by name');
  const b = await ollama.generate({ model: 'beta', prompt: 'Once', keep_alive: '10m', options: { num_predict: 4 } });
  check(b.done, 'generate() loads beta beside alpha');
  const ps = await ollama.ps();
  const expires = Date.parse(ps.models[0]?.expires_at);
  check(ps.models.map((m) => m.name).join() === 'beta,alpha', `ps(): most recent first: ${ps.models.map((m) => m.name)}`);
  check(expires > Date.now() + 8 * 60000 && expires < Date.now() + 11 * 60000,
        `ps(): beta expires in 10 minutes (keep_alive): ${ps.models[0]?.expires_at}`);

  const copied = await ollama.copy({ source: 'alpha', destination: 'gamma' });
  check(copied.status === 'success' && existsSync(path.join(dir, 'gamma.gguf')), 'copy() makes gamma');
  await expectError(ollama.copy({ source: 'alpha', destination: 'beta' }), 400, 'copy() onto an existing name');
  await expectError(ollama.copy({ source: 'nothing', destination: 'x' }), 404, 'copy() of a missing model');
  const g = await ollama.chat({ model: 'gamma', messages: [{ role: 'user', content: 'Hi' }], options: { num_predict: 4 } });
  check(g.done, 'chat() with the copy');
  check((await psNames(ollama)).join() === 'gamma,beta', 'two at most: alpha, the least recently used, was unloaded');

  const deleted = await ollama.delete({ model: 'gamma' });
  check(deleted.status === 'success' && !existsSync(path.join(dir, 'gamma.gguf')), 'delete() removes gamma');
  check((await ollama.list()).models.map((m) => m.name).join() === 'alpha,beta', 'list() after delete');
  await until('ps() after delete: beta only', async () => (await psNames(ollama)).join() === 'beta');
  await expectError(ollama.delete({ model: 'gamma' }), 404, 'delete() of a missing model');

  const unload = await ollama.generate({ model: 'beta', prompt: '', keep_alive: 0 });
  check(unload.done && unload.done_reason === 'unload', `keep_alive 0 with no prompt: ${unload.done_reason}`);
  await until('ps() empty after the unload', async () => (await psNames(ollama)).length === 0);
} catch (e) {
  fail(e);
} finally {
  await stopServer(server);
  rmSync(dir, { recursive: true, force: true });
}
finish();
