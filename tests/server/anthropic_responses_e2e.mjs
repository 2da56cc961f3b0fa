// End-to-end check of hearth-server's Anthropic Messages and OpenAI Responses endpoints with the
// official `@anthropic-ai/sdk` and `openai` npm clients, on stories260K: messages.create plain
// and streamed (the SDK's stream helper assembles the final message), countTokens, system
// prompts, stop_sequences, greedy output equal to the chat endpoint's, and forced tool use;
// responses.create plain and streamed, instructions, json_schema output (checked by ajv), and
// refused stateful requests. Exits 77 (skip) when the
// packages, the model or the server binary are missing.
import { skip, check, fail, finish, startServer, stopServer, requireFiles, npmRequire,
  storiesModel, serverBin, npmDir } from './e2e_support.mjs';

const model = storiesModel;
const apiKey = 'e2e-key';

let Anthropic, OpenAI, Ajv;
try {
  const mod = npmRequire('@anthropic-ai/sdk');
  Anthropic = mod.Anthropic ?? mod.default ?? mod;
  const oa = npmRequire('openai');
  OpenAI = oa.OpenAI ?? oa.default ?? oa;
  const a = npmRequire('ajv');
  Ajv = a.default ?? a;
} catch (e) {
  skip(`@anthropic-ai/sdk, openai and ajv must be installed in ${npmDir} (run scripts/install-npm-clients.sh)`);
}
const ajv = new Ajv({ allErrors: true, strict: false });
requireFiles(model, serverBin);

async function expectStatus(promise, status, what) {
  try {
    await promise;
    check(false, `${what}: refused`);
    return null;
  } catch (e) {
    check(e.status === status, `${what}: HTTP ${e.status} (want ${status})`);
    return e;
  }
}

const { server, base, healthy } = await startServer(model, ['--api-key', apiKey, '--ctx', '512']);

try {
  check(healthy, '/health answers 200 once the model is loaded');

  // The Anthropic client sends its key as x-api-key; the OpenAI client as a Bearer token.
  const claude = new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
  const ask = [{ role: 'user', content: 'Tell me a story' }];
  const system = 'You are a storyteller.';

  // --- Anthropic Messages ---
  const msg = await claude.messages.create({ model: 'stories260K', max_tokens: 24, messages: ask, temperature: 0 });
  check(msg.type === 'message' && msg.role === 'assistant' && msg.id.startsWith('msg_'), 'messages: a message with a msg_ id');
  check(msg.content.length === 1 && msg.content[0].type === 'text' && msg.content[0].text.length > 0, 'messages: one text block');
  check(msg.stop_reason === 'max_tokens' || msg.stop_reason === 'end_turn', `messages: stop_reason ${msg.stop_reason}`);
  check(msg.usage.output_tokens > 0 && msg.usage.input_tokens + (msg.usage.cache_read_input_tokens ?? 0) > 0, 'messages: usage');
  const greedy = msg.content[0].text;

  const chat = await openai.chat.completions.create({ model: 'stories260K', messages: ask, max_tokens: 24, temperature: 0 });
  check(chat.choices[0].message.content === greedy,
        `messages: greedy text equals the chat endpoint's (${JSON.stringify(greedy)} vs ${JSON.stringify(chat.choices[0].message.content)})`);

  const stream = claude.messages.stream({ model: 'stories260K', max_tokens: 24, messages: ask, temperature: 0 });
  let streamedText = '';
  const seen = [];
  stream.on('text', (t) => { streamedText += t; });
  stream.on('streamEvent', (e) => seen.push(e.type));
  const final = await stream.finalMessage();
  check(final.content[0]?.text === greedy, 'messages stream: finalMessage() holds the greedy text');
  check(streamedText === greedy, 'messages stream: text events add up to it');
  check(final.stop_reason === msg.stop_reason && final.usage.output_tokens === msg.usage.output_tokens,
        'messages stream: stop_reason and usage as non-streamed');
  check(seen[0] === 'message_start' && seen.at(-1) === 'message_stop' && seen.includes('content_block_delta'),
        `messages stream: events ${[...new Set(seen)].join(',')}`);

  // System prompts: a string and text blocks are the same prompt; both reach the template.
  const withSys = await claude.messages.create({ model: 'stories260K', max_tokens: 24, system, messages: ask, temperature: 0 });
  const withBlocks = await claude.messages.create({
    model: 'stories260K', max_tokens: 24, system: [{ type: 'text', text: system }], messages: ask, temperature: 0,
  });
  check(withSys.content[0].text === withBlocks.content[0].text, 'system: string and text blocks give the same output');
  const chatSys = await openai.chat.completions.create({
    model: 'stories260K', messages: [{ role: 'system', content: system }, ...ask], max_tokens: 24, temperature: 0,
  });
  check(chatSys.choices[0].message.content === withSys.content[0].text, 'system: greedy text equals the chat endpoint\'s');

  const count = await claude.messages.countTokens({ model: 'stories260K', messages: ask });
  const countSys = await claude.messages.countTokens({ model: 'stories260K', system, messages: ask });
  check(count.input_tokens === msg.usage.input_tokens + (msg.usage.cache_read_input_tokens ?? 0),
        `countTokens: ${count.input_tokens} = the message's input tokens`);
  check(countSys.input_tokens > count.input_tokens, 'countTokens: a system prompt adds tokens');
  check(count.input_tokens === chat.usage.prompt_tokens, 'countTokens: equals the chat endpoint\'s prompt_tokens');

  // Stop sequences: cut before a word of the greedy text.
  const word = greedy.split(/\s+/).filter((w) => w.length >= 3 && greedy.indexOf(w) > 0)[0];
  if (word) {
    const stopped = await claude.messages.create({
      model: 'stories260K', max_tokens: 24, messages: ask, temperature: 0, stop_sequences: ['@@never@@', word],
    });
    check(stopped.stop_reason === 'stop_sequence' && stopped.stop_sequence === word,
          `stop_sequences: stop_reason stop_sequence, stop_sequence ${JSON.stringify(stopped.stop_sequence)}`);
    check(stopped.content[0].text === greedy.slice(0, greedy.indexOf(word)), 'stop_sequences: text ends before it');
    const sstream = await claude.messages.stream({
      model: 'stories260K', max_tokens: 24, messages: ask, temperature: 0, stop_sequences: [word],
    }).finalMessage();
    check(sstream.stop_reason === 'stop_sequence' && sstream.stop_sequence === word, 'stop_sequences: streamed too');
  } else {
    check(false, `stop_sequences: no word to stop at in ${JSON.stringify(greedy)}`);
  }

  // tool_choice tool: the model must call it, with input that follows input_schema. One call
  // (disable_parallel_tool_use): allowed more, stories260K starts a second that max_tokens cuts,
  // and a cut turn ends with stop_reason max_tokens, as Anthropic's does.
  const weather = {
    name: 'get_weather', description: 'The weather in a city',
    input_schema: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'], additionalProperties: false },
  };
  const forced = await claude.messages.create({
    model: 'stories260K', max_tokens: 120, messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tools: [weather], tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true }, temperature: 0,
  });
  const use = forced.content.find((b) => b.type === 'tool_use');
  check(forced.stop_reason === 'tool_use' && use?.name === 'get_weather' && use.id.startsWith('toolu_'),
        `tool_choice tool: a tool_use block (${JSON.stringify(forced.content)})`);
  check(use && ajv.validate(weather.input_schema, use.input), 'tool_choice tool: input follows input_schema');
  const forcedStream = await claude.messages.stream({
    model: 'stories260K', max_tokens: 120, messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tools: [weather], tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true }, temperature: 0,
  }).finalMessage();
  const suse = forcedStream.content.find((b) => b.type === 'tool_use');
  check(forcedStream.stop_reason === 'tool_use' && JSON.stringify(suse?.input) === JSON.stringify(use?.input),
        'tool_choice tool: streamed, the SDK assembles the same input from input_json_delta');

  const noMax = await expectStatus(claude.messages.create({ model: 'stories260K', messages: ask }), 400, 'messages: missing max_tokens');
  check(noMax?.error?.type === 'error' && noMax?.error?.error?.type === 'invalid_request_error',
        'messages: errors in Anthropic\'s shape');
  await expectStatus(claude.messages.create({
    model: 'stories260K', max_tokens: 8,
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }],
  }), 400, 'messages: image blocks');
  await expectStatus(new Anthropic({ baseURL: base, apiKey: 'wrong', maxRetries: 0 }).messages.create({
    model: 'stories260K', max_tokens: 8, messages: ask,
  }), 401, 'messages: wrong x-api-key');

  // --- OpenAI Responses ---
  const resp = await openai.responses.create({ model: 'stories260K', input: 'Tell me a story', max_output_tokens: 24, temperature: 0 });
  check(resp.object === 'response' && resp.id.startsWith('resp_'), 'responses: a response with a resp_ id');
  check(resp.status === 'completed' || resp.status === 'incomplete', `responses: status ${resp.status}`);
  check(resp.output[0]?.type === 'message' && resp.output[0].content[0].type === 'output_text', 'responses: a message with output_text');
  check(resp.output_text === greedy, 'responses: greedy output_text equals the chat endpoint\'s');
  check(resp.usage.input_tokens === chat.usage.prompt_tokens && resp.usage.output_tokens > 0 &&
        resp.usage.total_tokens === resp.usage.input_tokens + resp.usage.output_tokens, 'responses: usage adds up');

  const instructed = await openai.responses.create({
    model: 'stories260K', instructions: system, input: [{ role: 'user', content: 'Tell me a story' }],
    max_output_tokens: 24, temperature: 0,
  });
  check(instructed.output_text === chatSys.choices[0].message.content, 'responses: instructions act as the system prompt');
  check(instructed.instructions === system, 'responses: instructions echoed');

  const rstream = openai.responses.stream({ model: 'stories260K', input: 'Tell me a story', max_output_tokens: 24, temperature: 0 });
  const rseen = [];
  let rtext = '';
  for await (const ev of rstream) {
    rseen.push(ev.type);
    if (ev.type === 'response.output_text.delta') rtext += ev.delta;
  }
  const rfinal = await rstream.finalResponse();
  check(rtext === greedy, 'responses stream: deltas add up to the greedy text');
  // (This SDK's finalResponse() sets output_text only when it parses a text format.)
  check(rfinal.output?.[0]?.content?.[0]?.text === greedy && rfinal.id.startsWith('resp_'),
        'responses stream: finalResponse() holds it');
  check(rseen[0] === 'response.created' && rseen.includes('response.output_item.done') &&
        ['response.completed', 'response.incomplete'].includes(rseen.at(-1)), `responses stream: events ${[...new Set(rseen)].join(',')}`);

  const rs = await openai.responses.create({ model: 'stories260K', input: 'Tell me a story', max_output_tokens: 8, stream: true });
  let raw = 0;
  for await (const ev of rs) if (ev.type === 'response.output_text.delta') raw++;
  check(raw > 0, 'responses: stream: true iterates typed events');

  // Structured output: a JSON schema the text must follow.
  const person = {
    type: 'object',
    properties: { name: { type: 'string', maxLength: 10 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
    required: ['name', 'age'], additionalProperties: false,
  };
  const structured = await openai.responses.create({
    model: 'stories260K', input: 'Tell me a story', max_output_tokens: 120, temperature: 0,
    text: { format: { type: 'json_schema', name: 'person', schema: person, strict: true } },
  });
  let parsed = null;
  try { parsed = JSON.parse(structured.output_text); } catch (e) { /* checked below */ }
  check(structured.status === 'completed' && parsed !== null && ajv.validate(person, parsed),
        `text.format json_schema: output follows the schema (${JSON.stringify(structured.output_text)})`);
  const sstructured = await openai.responses.stream({
    model: 'stories260K', input: 'Tell me a story', max_output_tokens: 120, temperature: 0,
    text: { format: { type: 'json_schema', name: 'person', schema: person, strict: true } },
  }).finalResponse();
  check(sstructured.output?.[0]?.content?.[0]?.text === structured.output_text,
        'text.format json_schema: streamed, the same text');
  const badSchema = await expectStatus(openai.responses.create({
    model: 'stories260K', input: 'x',
    text: { format: { type: 'json_schema', name: 'n', strict: true, schema: { type: 'object', properties: { n: { type: 'number', multipleOf: 3 } } } } },
  }), 400, 'text.format json_schema: with strict, a keyword the server cannot enforce is refused');
  check(/multipleOf/.test(badSchema?.message ?? ''), 'text.format json_schema: the refusal names the keyword');

  const prev = await expectStatus(openai.responses.create({
    model: 'stories260K', input: 'more', previous_response_id: resp.id,
  }), 400, 'responses: previous_response_id');
  check(/keeps no state/.test(prev?.message ?? ''), 'responses: the refusal says the server keeps no state');
  await expectStatus(openai.responses.create({ model: 'stories260K', input: 'x', store: true }), 400, 'responses: store: true');
  await expectStatus(openai.responses.create({ model: 'stories260K', input: 'x', tools: [{ type: 'web_search_preview' }] }),
                     400, 'responses: built-in tools');
} catch (e) {
  fail(e);
} finally {
  await stopServer(server);
}
finish();
