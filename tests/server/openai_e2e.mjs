// End-to-end check of hearth-server with the official `openai` npm client: starts the server on
// stories260K on a free port, waits for /health, then checks chat (plain and streamed),
// completions, n=2, stop strings and usage, and that greedy /v1/completions output equals
// `hearth-cli run ... --temp 0`. Exits 77 (skip) when the package or the model is missing.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { skip, check, fail, finish, startServer, stopServer, requireFiles, npmRequire,
  storiesModel, serverBin, cliBin, npmDir } from './e2e_support.mjs';

const model = storiesModel;
const apiKey = 'e2e-key';

let OpenAI;
try {
  const mod = npmRequire('openai');
  OpenAI = mod.OpenAI ?? mod.default ?? mod;
} catch (e) {
  skip(`the openai package is not installed in ${npmDir} (run scripts/install-npm-clients.sh)`);
}
requireFiles(model, serverBin);

const { server, base, healthy } = await startServer(model, ['--api-key', apiKey, '--ctx', '512']);

try {
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
  fail(e);
} finally {
  await stopServer(server);
}
finish();
