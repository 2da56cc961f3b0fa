// End-to-end check of structured output with the official `openai` npm client and a real JSON
// Schema validator (ajv + ajv-formats): hearth-server on stories260K (SentencePiece with byte
// fallback) and on a synthetic llama with Qwen2's byte-level BPE vocabulary (151,936 tokens,
// random weights, so the grammar does all the work). For every schema of a varied set, at
// temperature 1 and several seeds, the output must validate; tool_choice "required" must yield
// calls whose arguments validate, streamed in fragments. Exits 77 (skip) when a package, the
// models or the binaries are missing.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { skip, check, fail, finish, startServer, stopServer, requireFiles, npmRequire,
  storiesModel, serverBin, cliBin, dataDir, npmDir } from './e2e_support.mjs';

const stories = storiesModel;
const qwenVocab = path.join(dataDir, 'models', 'ggml-vocab-qwen2.gguf');

let OpenAI, Ajv, addFormats;
try {
  const o = npmRequire('openai');
  OpenAI = o.OpenAI ?? o.default ?? o;
  const a = npmRequire('ajv/dist/2020'); // draft 2020-12: prefixItems
  Ajv = a.default ?? a;
  const f = npmRequire('ajv-formats');
  addFormats = f.default ?? f;
} catch (e) {
  skip(`openai, ajv or ajv-formats is not installed in ${npmDir} (run scripts/install-npm-clients.sh)`);
}
requireFiles(stories, qwenVocab, serverBin, cliBin);

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);

// Strings and arrays are bounded: a model with random weights writes as long as it is allowed.
const schemas = {
  person: {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 12 },
      age: { type: 'integer', minimum: 0, maximum: 120 },
      member: { type: 'boolean' },
      nickname: { type: ['string', 'null'], maxLength: 8 },
    },
    required: ['name', 'age'],
    additionalProperties: false,
  },
  enums: {
    type: 'object',
    properties: {
      color: { enum: ['red', 'green', 'blue', 42, null] },
      kind: { const: 'fixed' },
      size: { anyOf: [{ type: 'integer', minimum: -5, maximum: 5 }, { enum: ['S', 'M', 'L'] }] },
    },
    required: ['color', 'kind', 'size'],
    additionalProperties: false,
  },
  list: {
    type: 'array',
    minItems: 1,
    maxItems: 3,
    items: {
      type: 'object',
      properties: { id: { type: 'integer', minimum: 1, maximum: 999999 }, score: { type: 'number', minimum: 0, maximum: 1 } },
      required: ['id', 'score'],
      additionalProperties: false,
    },
  },
  formats: {
    type: 'object',
    properties: {
      day: { type: 'string', format: 'date' },
      at: { type: 'string', format: 'time' },
      stamp: { type: 'string', format: 'date-time' },
      uid: { type: 'string', format: 'uuid' },
      code: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{2,4}$' },
    },
    required: ['day', 'at', 'stamp', 'uid', 'code'],
    additionalProperties: false,
  },
  // Formats with lengths, as Pydantic writes EmailStr / HttpUrl with max_length.
  contact: {
    type: 'object',
    properties: {
      email: { type: 'string', format: 'email', maxLength: 40 },
      site: { type: 'string', format: 'uri', minLength: 12, maxLength: 60 },
      host: { type: 'string', format: 'hostname', maxLength: 16 },
    },
    required: ['email', 'site', 'host'],
    additionalProperties: false,
  },
  recursive: {
    $defs: {
      node: {
        type: 'object',
        properties: { value: { type: 'integer', minimum: 0, maximum: 9 }, next: { $ref: '#/$defs/node' } },
        required: ['value'],
        additionalProperties: false,
      },
    },
    $ref: '#/$defs/node',
  },
  tuple: {
    type: 'array',
    prefixItems: [{ type: 'string', maxLength: 4 }, { type: 'integer', minimum: 10, maximum: 20 }],
    items: false,
  },
};

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 10 }, unit: { enum: ['c', 'f'] } },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'add',
      parameters: {
        type: 'object',
        properties: { a: { type: 'integer', minimum: -100, maximum: 100 }, b: { type: 'integer', minimum: -100, maximum: 100 } },
        required: ['a', 'b'],
        additionalProperties: false,
      },
    },
  },
];

// stories260K, a trained model, keeps extending a recursive list until max_tokens: the recursive
// schema runs on the random model only.
async function exercise(label, model, seeds, skipSchemas = []) {
  const { server, base } = await startServer(model, ['--ctx', '1024']);
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0 });
  const messages = [{ role: 'user', content: 'Answer in JSON.' }];
  try {
    for (const [name, schema] of Object.entries(schemas)) {
      if (skipSchemas.includes(name)) continue;
      const validate = ajv.compile(schema);
      let good = 0;
      for (const seed of seeds) {
        const r = await client.chat.completions.create({
          model: 'm', messages, temperature: 1, seed, max_tokens: 400,
          response_format: { type: 'json_schema', json_schema: { name, schema, strict: true } },
        });
        const text = r.choices[0].message.content;
        let value, parsed = false;
        try { value = JSON.parse(text); parsed = true; } catch (e) { /* reported below */ }
        const ok = r.choices[0].finish_reason === 'stop' && parsed && validate(value);
        if (!ok) console.log(`  ${label} ${name} seed ${seed}: ${r.choices[0].finish_reason} ${JSON.stringify(text).slice(0, 300)} ${JSON.stringify(validate.errors ?? [])}`);
        good += ok ? 1 : 0;
      }
      check(good === seeds.length, `${label}: schema '${name}' validated ${good}/${seeds.length} at temperature 1`);
    }

    // n = 2 with a stop string: every choice validates.
    {
      const validate = ajv.compile(schemas.person);
      const r = await client.chat.completions.create({
        model: 'm', messages, temperature: 1, seed: 5, n: 2, max_tokens: 400, stop: ['\n\n\n'],
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema: schemas.person } },
      });
      check(r.choices.length === 2 && r.choices.every((c) => validate(JSON.parse(c.message.content))),
            `${label}: n=2 choices both validate`);
    }

    // Streamed: the concatenated deltas are the same document as the whole response.
    {
      const body = { model: 'm', messages, temperature: 1, seed: 9, max_tokens: 400,
                     response_format: { type: 'json_schema', json_schema: { name: 'list', schema: schemas.list } } };
      const whole = await client.chat.completions.create(body);
      let text = '';
      for await (const chunk of await client.chat.completions.create({ ...body, stream: true }))
        text += chunk.choices[0]?.delta?.content ?? '';
      check(text === whole.choices[0].message.content && ajv.compile(schemas.list)(JSON.parse(text)),
            `${label}: streamed structured output equals the whole response and validates`);
    }

    // tool_choice "required": calls whose arguments validate against their function's schema.
    const validators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
    let callsOk = 0;
    for (const seed of seeds) {
      const r = await client.chat.completions.create({
        model: 'm', messages: [{ role: 'user', content: 'What is the weather?' }], tools, tool_choice: 'required',
        parallel_tool_calls: seed === 1, temperature: 1, seed, max_tokens: 800,
      });
      const calls = r.choices[0].message.tool_calls ?? [];
      const ok = r.choices[0].finish_reason === 'tool_calls' && calls.length > 0 &&
        calls.every((c) => validators[c.function.name]?.(JSON.parse(c.function.arguments)));
      if (!ok) console.log(`  ${label} required seed ${seed}: ${JSON.stringify(r.choices[0]).slice(0, 400)}`);
      callsOk += ok ? 1 : 0;
    }
    check(callsOk === seeds.length, `${label}: tool_choice "required" gave valid calls ${callsOk}/${seeds.length}`);

    // A named function, streamed: the name first, then the arguments in several fragments.
    {
      const stream = await client.chat.completions.create({
        model: 'm', messages: [{ role: 'user', content: 'Add two numbers.' }], tools, stream: true,
        tool_choice: { type: 'function', function: { name: 'add' } }, temperature: 1, seed: 3, max_tokens: 400,
      });
      let name = '', args = '', fragments = 0, finish = null;
      for await (const chunk of stream) {
        const d = chunk.choices[0]?.delta;
        for (const tc of d?.tool_calls ?? []) {
          if (tc.function?.name) name = tc.function.name;
          if (tc.function?.arguments) { args += tc.function.arguments; fragments++; }
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      check(name === 'add' && validators.add(JSON.parse(args)) && finish === 'tool_calls',
            `${label}: a named tool call streams (name '${name}', arguments ${args})`);
      check(fragments > 1, `${label}: the arguments came in ${fragments} fragments`);
    }

    // GBNF given directly (llama.cpp's grammar field).
    {
      const r = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages, temperature: 1, seed: 2, max_tokens: 50, grammar: 'root ::= ("yes" | "no") "!"' }),
      }).then((x) => x.json());
      const t = r.choices?.[0]?.message?.content;
      check(t === 'yes!' || t === 'no!', `${label}: a GBNF grammar gives '${t}'`);
    }

    // Schemas we cannot honour, and broken grammars, are 400s saying which part.
    for (const [what, body] of [
      ['multipleOf with strict', { response_format: { type: 'json_schema', json_schema: { name: 'x', strict: true, schema: { type: 'integer', multipleOf: 3 } } } }],
      ['a $ref cycle that cannot end', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {
        $defs: { a: { type: 'object', properties: { a: { $ref: '#/$defs/a' } }, required: ['a'] } }, $ref: '#/$defs/a' } } } }],
      ['an undefined rule', { grammar: 'root ::= nothing' }],
    ]) {
      const r = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages, max_tokens: 5, ...body }),
      });
      const j = await r.json();
      check(r.status === 400 && typeof j.error?.message === 'string', `${label}: ${what} is refused (${r.status}: ${j.error?.message})`);
    }
  } finally {
    await stopServer(server);
  }
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'hearth-structured-'));
try {
  const bpe = path.join(tmp, 'llama-tiny-qwen2-vocab.gguf');
  execFileSync(cliBin, ['synth', '--preset', 'llama-tiny', '--type', 'Q8_0', '--vocab', qwenVocab, '-o', bpe], { stdio: ['ignore', 'ignore', 'inherit'] });
  await exercise('stories260K', stories, [1, 2, 3], ['recursive']);
  await exercise('byte-level BPE', bpe, [1, 2, 3]);
} catch (e) {
  fail(e);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
finish();
