// A model's whole life on hearth-server --data-dir with the official `ollama` npm client, pulled
// from a stand-in hub on 127.0.0.1 (HEARTH_HUB_URL): pull with streamed progress in Ollama's
// shape, list, chat by the pulled name, ps, a whole (not streamed) pull, a missing repository
// and quantization, a connection broken once (resumed within the pull), a download cut for good
// (an error, no model file; the .part it leaves is resumed by the next pull), and delete. Exits 77 (skip) when the package or the model is missing.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { check, startServer, requireFiles, ollamaClass, storiesModel, serverBin, cliBin, fail, finish,
  stopServer } from './e2e_support.mjs';
import { StandInHub } from './stand_in_hub.mjs';

const Ollama = ollamaClass();
requireFiles(storiesModel, serverBin, cliBin); // /api/pull runs the hearth-cli beside the server

// Guards a step against hanging; never a speed check.
function guard(promise, what, ms = 20000) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms / 1000} s`)), ms);
  })]).finally(() => clearTimeout(timer));
}
// The error a call throws (null when it does not).
async function thrown(promise, what) {
  try {
    await guard(promise, what);
    return null;
  } catch (e) {
    return e;
  }
}
const text = (e) => JSON.stringify(e?.error ?? e?.message ?? String(e));

const model = readFileSync(storiesModel);
const hub = await new StandInHub().start();
const q8 = hub.addFile('acme/tiny-GGUF', 'stories-Q8_0.gguf', model);
hub.addFile('acme/tiny-GGUF', 'stories-Q4_K_M.gguf', model);
const cut = hub.addFile('acme/cut-GGUF', 'cut-Q8_0.gguf', model);
const flaky = hub.addFile('acme/flaky-GGUF', 'flaky-Q8_0.gguf', model);

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'hearth-pull-'));
const library = path.join(dataDir, 'models'); // --data-dir's library without a hearth.ini
const inLibrary = (file) => existsSync(path.join(library, file));
const started = Date.now();
const { server, base, healthy, log } = await startServer(null, ['--data-dir', dataDir, '--ctx', '256', '--threads', '1'],
                                                        { HEARTH_HUB_URL: hub.url, HEARTH_API_KEY: undefined });
try {
  check(healthy, '/health answers 200 on an empty --data-dir library');
  const ollama = new Ollama({ host: base });
  const names = async () => (await ollama.list()).models.map((m) => m.name);
  check((await names()).length === 0, 'list() is empty before the pull');

  // 1. A streamed pull: Ollama's progress lines, the download's rising to its total, then success.
  const pulled = 'acme/tiny-GGUF:Q8_0';
  const events = [];
  await guard((async () => {
    for await (const p of await ollama.pull({ model: pulled, stream: true })) events.push(p);
  })(), 'streamed pull');
  const digest = `sha256:${q8.sha256}`;
  const download = events.filter((e) => e.status === 'pulling stories-Q8_0.gguf');
  const completed = download.map((e) => e.completed);
  check(events.every((e) => typeof e.status === 'string' && !('error' in e)),
        `every progress event has a status and no error: ${events.map((e) => e.status).join(' | ')}`);
  check(events[0]?.status === 'pulling manifest' && events.at(-1)?.status === 'success',
        'the progress starts with "pulling manifest" and ends with "success"');
  check(download.length >= 3 && download.every((e) => e.total === model.length && e.digest === digest),
        `${download.length} download events, each with total ${model.length} and the file's digest`);
  check(completed.every((c, i) => Number.isInteger(c) && (i === 0 || c >= completed[i - 1])) &&
        completed.some((c) => c > 0 && c < model.length) && completed.at(-1) === model.length,
        `completed rises to the total: ${completed.join(', ')}`);
  check(events.some((e) => e.status === 'verifying sha256 digest'), 'a "verifying sha256 digest" event');
  check(inLibrary('stories-Q8_0.gguf') && readFileSync(path.join(library, 'stories-Q8_0.gguf')).equals(model) &&
        !inLibrary('stories-Q8_0.gguf.part'), 'the file is in the library, whole, with no .part beside it');

  // 2. Listed with its size; chat by the pulled name; loaded in ps() afterwards.
  const listed = (await ollama.list()).models;
  const entry = listed.find((m) => m.name === 'stories-Q8_0');
  check(listed.length === 1 && entry?.size === model.length,
        `list() names the pulled file with its ${model.length} bytes: ${JSON.stringify(listed.map((m) => [m.name, m.size]))}`);
  const answer = await guard(ollama.chat({ model: pulled, messages: [{ role: 'user', content: 'Once upon a time' }],
                                           options: { num_predict: 8, temperature: 0 } }), 'chat');
  check(answer.done === true && typeof answer.message?.content === 'string' && answer.message.content.length > 0,
        `chat() by the pulled name answers: ${JSON.stringify(answer.message?.content)}`);
  const ps = (await ollama.ps()).models.map((m) => m.name);
  check(ps.length === 1 && ps[0] === 'stories-Q8_0', `ps() shows it loaded: ${ps}`);

  // 3. Whole pulls: a second name (the default quantization, Q4_K_M) and the same name again (no
  // download: the file is there).
  const before = hub.downloads().length;
  const whole = await guard(ollama.pull({ model: 'acme/tiny-GGUF', stream: false }), 'whole pull');
  check(JSON.stringify(whole) === '{"status":"success"}' && inLibrary('stories-Q4_K_M.gguf') &&
        statSync(path.join(library, 'stories-Q4_K_M.gguf')).size === model.length,
        `a whole pull of acme/tiny-GGUF: ${JSON.stringify(whole)}, stories-Q4_K_M.gguf in the library`);
  const again = await guard(ollama.pull({ model: pulled, stream: false }), 'second whole pull');
  check(again.status === 'success' && hub.downloads().length === before + 1,
        `a whole pull of ${pulled} again: ${JSON.stringify(again)}, nothing downloaded twice`);

  // 4. Bad input: the status and a message naming the problem.
  let e = await thrown(ollama.pull({ model: 'acme/missing-GGUF', stream: false }), 'pull of a missing repo');
  check(e?.status_code === 404 && /acme\/missing-GGUF/.test(e.error) && /not found/i.test(e.error),
        `a missing repository: HTTP ${e?.status_code} ${text(e)}`);
  e = await thrown(ollama.pull({ model: 'acme/tiny-GGUF:Q5_K_M', stream: false }), 'pull of a missing quantization');
  check(e?.status_code === 404 && /Q5_K_M/.test(e.error),
        `a quantization the repository lacks: HTTP ${e?.status_code} ${text(e)}`);
  e = await thrown(ollama.pull({ model: 'acme/missing-GGUF', stream: true }).then(async (it) => { for await (const _ of it); }),
                   'streamed pull of a missing repo');
  check(e instanceof Error && /acme\/missing-GGUF/.test(e.message),
        `streamed, the error line makes the client throw: ${text(e)}`);

  // A connection that breaks once midway (the full Content-Length announced, 300 kB sent): the
  // same pull goes on from where it broke, and succeeds. Named as Ollama names hub models.
  flaky.cutAfter = 300000;
  flaky.cutOnce = true;
  const flakyPull = await guard(ollama.pull({ model: 'hf.co/acme/flaky-GGUF:Q8_0', stream: false }),
                                'pull through a broken connection');
  const flakyRanges = hub.downloads('flaky-Q8_0.gguf').map((d) => d.range);
  check(flakyPull.status === 'success' && flakyRanges.length === 2 && flakyRanges[1] === 'bytes=300000-',
        `a broken connection is resumed within the pull: ${JSON.stringify(flakyPull)}, Ranges ${JSON.stringify(flakyRanges)}`);
  check(inLibrary('flaky-Q8_0.gguf') && readFileSync(path.join(library, 'flaky-Q8_0.gguf')).equals(model) &&
        !existsSync(path.join(library, 'flaky-Q8_0.gguf.part')), 'and the file is whole, with no .part left');

  // A download cut midway: the hub sends the full Content-Length, 400 kB and closes the
  // connection, and then answers 404 for the file (gone from the repository).
  cut.cutAfter = 400000;
  cut.withdrawnAfterCut = true;
  e = await thrown(ollama.pull({ model: 'acme/cut-GGUF:Q8_0', stream: true }).then(async (it) => { for await (const _ of it); }),
                   'pull of a cut download');
  check(e instanceof Error && /cut-Q8_0\.gguf/.test(e.message), `the cut download is an error: ${text(e)}`);
  const part = path.join(library, 'cut-Q8_0.gguf.part');
  const partBytes = existsSync(part) ? statSync(part).size : 0;
  check(!inLibrary('cut-Q8_0.gguf') && readdirSync(library).every((f) => !f.startsWith('cut') || f === 'cut-Q8_0.gguf.part'),
        `no model file from the cut download (the folder holds ${readdirSync(library).join(', ')})`);
  check(partBytes < model.length, `what is left of it is a .part short of the file: ${partBytes} bytes`);
  check(!(await names()).some((n) => n.startsWith('cut')), 'list() does not show the cut download');
  // The file back on the hub: the next pull resumes the .part and leaves nothing partial.
  cut.cutAfter = 0;
  cut.withdrawn = false;
  const resumed = await guard(ollama.pull({ model: 'acme/cut-GGUF:Q8_0', stream: false }), 'pull after the cut');
  const last = hub.downloads('cut-Q8_0.gguf').at(-1);
  check(resumed.status === 'success' && (partBytes === 0 ? last?.range === '' : last?.range === `bytes=${partBytes}-`),
        `the next pull succeeds, asking for the rest: Range "${last?.range}"`);
  check(inLibrary('cut-Q8_0.gguf') && readFileSync(path.join(library, 'cut-Q8_0.gguf')).equals(model) && !existsSync(part),
        'then the file is whole and no .part is left');

  // 5. Delete by the pulled name: gone from list() and the disk; a chat by that name is a 404.
  const deleted = await guard(ollama.delete({ model: pulled }), 'delete');
  check(deleted.status === 'success', `delete() by the pulled name: ${JSON.stringify(deleted)}`);
  const after = await names();
  check(!after.includes('stories-Q8_0') && after.includes('stories-Q4_K_M'), `list() after delete: ${after}`);
  check(!inLibrary('stories-Q8_0.gguf'), 'the file is gone from the disk');
  e = await thrown(ollama.chat({ model: pulled, messages: [{ role: 'user', content: 'Hi' }], options: { num_predict: 2 } }),
                   'chat after delete');
  check(e?.status_code === 404, `chat() by the deleted name: HTTP ${e?.status_code} ${text(e)}`);
  e = await thrown(ollama.delete({ model: pulled }), 'second delete');
  check(e?.status_code === 404, `delete() again: HTTP ${e?.status_code} ${text(e)}`);
} catch (e) {
  fail(e);
  console.log(log());
} finally {
  await stopServer(server);
  await hub.stop();
  rmSync(dataDir, { recursive: true, force: true });
  console.log(`took ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
finish();
