// End-to-end check of hearth-server with the official `openai` npm client: starts the server on
// stories260K on a free port, waits for /health, then checks chat (plain and streamed),
// completions, n=2, stop strings and usage, and that greedy /v1/completions output equals
// `hearth-cli run ... --temp 0`. Exits 77 (skip) when the package or the model is missing.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';

const SKIP = 77;
const binDir = process.env.HEARTH_BIN_DIR ?? 'build/bin';
const dataDir = process.env.HEARTH_TEST_DATA ?? '../shared';
const npmDir = process.env.HEARTH_NPM_DIR || path.join(os.homedir(), '.cache', 'hearth-npm');
const model = path.join(dataDir, 'models', 'stories260K.gguf');
const serverBin = path.join(binDir, 'hearth-server');
const cliBin = path.join(binDir, 'hearth-cli');
const apiKey = 'e2e-key';

function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(SKIP);
}

let OpenAI;
try {
  const require = createRequire(path.join(npmDir, 'package.json'));
  const mod = require('openai');
  OpenAI = mod.OpenAI ?? mod.default ?? mod;
} catch (e) {
  skip(`the openai package is not installed in ${npmDir} (run scripts/install-npm-clients.sh)`);
}
if (!existsSync(model)) skip(`model not found: ${model}`);
if (!existsSync(serverBin)) skip(`not built: ${serverBin}`);

let failures = 0;
function check(cond, what) {
  if (cond) {
    console.log(`ok   ${what}`);
  } else {
    console.log(`FAIL ${what}`);
    failures++;
  }
}

// Start the server on a free port (it prints the port it bound).
const server = spawn(serverBin, ['--model', model, '--port', '0', '--api-key', apiKey, '--ctx', '512'],
                     { stdio: ['ignore', 'inherit', 'pipe'] });
let serverLog = '';
const port = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('no listening line from hearth-server')), 30000);
  server.stderr.on('data', (chunk) => {
    serverLog += chunk.toString();
    const m = serverLog.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m) {
      clearTimeout(timer);
      resolve(Number(m[1]));
    }
  });
  server.on('exit', (code) => reject(new Error(`hearth-server exited early (${code}):\n${serverLog}`)));
});
const base = `http://127.0.0.1:${port}`;

try {
  // /health: 503 while loading, then 200.
  const deadline = Date.now() + 60000;
  let healthy = false;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(`${base}/health`);
      if (r.status === 200) { healthy = true; break; }
    } catch (e) { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  check(healthy, '/health answers 200 once the model is loaded');

  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
  const models = await client.models.list();
  check(models.data.some((m) => m.id === 'stories260K'), 'models.list() names stories260K');

  const chat = await client.chat.completions.create({
    model: 'stories260K', messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 16, seed: 1,
  });
  check(chat.object === 'chat.completion', 'chat: object is chat.completion');
  check(typeof chat.choices[0].message.content === 'string', 'chat: message content is a string');
  check(chat.usage.prompt_tokens > 0 && chat.usage.completion_tokens > 0 &&
        chat.usage.total_tokens === chat.usage.prompt_tokens + chat.usage.completion_tokens,
        'chat: usage adds up');

  const stream = await client.chat.completions.create({
    model: 'stories260K', messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 16,
    stream: true, stream_options: { include_usage: true },
  });
  let streamed = '', sawRole = false, finish = null, streamUsage = null;
  for await (const chunk of stream) {
    if (chunk.usage) streamUsage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.role === 'assistant') sawRole = true;
      if (c.delta?.content) streamed += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  check(sawRole, 'chat stream: first delta carries the assistant role');
  check(finish === 'length' || finish === 'stop', `chat stream: finish_reason ${finish}`);
  check(streamUsage && streamUsage.completion_tokens > 0, 'chat stream: usage chunk at the end');
  check(streamed.length > 0, 'chat stream: content arrived');

  const prompt = 'Once upon a time';
  const greedy = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 32, temperature: 0 });
  const text = greedy.choices[0].text;
  check(greedy.object === 'text_completion', 'completions: object is text_completion');
  check(greedy.usage.prompt_tokens === 5 && greedy.usage.completion_tokens === 32, 'completions: usage 5 + 32');
  check(text.startsWith(', there was a little girl named Lily.'), `completions: greedy text ${JSON.stringify(text)}`);

  if (existsSync(cliBin)) {
    const cli = execFileSync(cliBin, ['run', model, '-p', prompt, '-n', '32', '--temp', '0'],
                             { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    check(cli === text + '\n', 'completions: greedy text equals hearth-cli run --temp 0');
  } else {
    console.log(`note: ${cliBin} not built; skipped the hearth-cli comparison`);
  }

  const two = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 8, n: 2, seed: 5 });
  check(two.choices.length === 2 && two.choices[1].index === 1, 'completions: n=2 gives two choices');

  const stopped = await client.completions.create({
    model: 'stories260K', prompt, max_tokens: 32, temperature: 0, stop: ['Lily'],
  });
  check(stopped.choices[0].text === ', there was a little girl named ' &&
        stopped.choices[0].finish_reason === 'stop', 'completions: stop string ends the text before it');

  const cstream = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 32, temperature: 0, stream: true });
  let ctext = '';
  for await (const chunk of cstream) for (const c of chunk.choices) ctext += c.text ?? '';
  check(ctext === text, 'completions stream: same text as non-streamed');

  // Errors come back as the client's typed errors.
  try {
    await client.chat.completions.create({ model: 'stories260K', messages: [], max_tokens: 4 });
    check(false, 'empty messages are refused');
  } catch (e) {
    check(e.status === 400, `empty messages: HTTP ${e.status}`);
  }
  try {
    await new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong', maxRetries: 0 }).models.list();
    check(false, 'a wrong API key is refused');
  } catch (e) {
    check(e.status === 401, `wrong API key: HTTP ${e.status}`);
  }
} catch (e) {
  console.log(`FAIL ${e.stack ?? e}`);
  failures++;
} finally {
  server.kill('SIGTERM');
  if (server.exitCode === null && server.signalCode === null) await new Promise((r) => server.on('exit', r));
}
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
