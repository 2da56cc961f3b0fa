// What the end-to-end server tests share: where the binaries, data and npm clients are, skipping
// (exit 77) when something is missing, loading an npm package, the ok/FAIL tally, and a
// hearth-server started on a free port and waited for until /health answers 200.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';

export const SKIP = 77;
export const binDir = process.env.HEARTH_BIN_DIR ?? 'build/bin';
export const dataDir = process.env.HEARTH_TEST_DATA ?? '../shared';
export const srcDir = process.env.HEARTH_SOURCE_DIR ?? '.';
export const npmDir = process.env.HEARTH_NPM_DIR || path.join(os.homedir(), '.cache', 'hearth-npm');
export const serverBin = path.join(binDir, 'hearth-server');
export const cliBin = path.join(binDir, 'hearth-cli');
export const storiesModel = path.join(dataDir, 'models', 'stories260K.gguf');

export function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(SKIP);
}

// Skips unless every file exists.
export function requireFiles(...files) {
  for (const f of files) if (!existsSync(f)) skip(`not found: ${f}`);
}

// require() for the npm packages in $HEARTH_NPM_DIR.
export const npmRequire = createRequire(path.join(npmDir, 'package.json'));

// The official ollama client's class from $HEARTH_NPM_DIR; skips when it is not installed.
export function ollamaClass() {
  try {
    const mod = npmRequire('ollama');
    const Ollama = mod.Ollama ?? mod.default?.Ollama;
    if (!Ollama) throw new Error('no Ollama class in the package');
    return Ollama;
  } catch (e) {
    skip(`the ollama package is not installed in ${npmDir} (run scripts/install-npm-clients.sh): ${e.message}`);
  }
}

// The npm packages from $HEARTH_NPM_DIR (installed by scripts/install-npm-clients.sh); skips
// when one is missing.
export function requirePackages(...names) {
  try {
    return names.map((n) => npmRequire(n));
  } catch (e) {
    skip(`${names.join(', ')} must be installed in ${npmDir} (run scripts/install-npm-clients.sh): ${e.message}`);
  }
}

let failures = 0;
export function check(cond, what) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures++;
  return cond;
}

// An exception that ended a test block counts as a failure.
export function fail(e) {
  console.log(`FAIL ${e?.stack ?? e}`);
  failures++;
}

export function finish() {
  console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
  process.exit(failures ? 1 : 0);
}

// hearth-server on `model` (port 0: it prints the one it bound), then /health polled until 200.
// A null model leaves --model out (a library given in extraArgs); env is added to this process's.
export async function startServer(model, extraArgs = [], env = {}) {
  const server = spawn(serverBin, [...(model === null ? [] : ['--model', model]), '--port', '0', ...extraArgs],
                       { stdio: ['ignore', 'inherit', 'pipe'], env: { ...process.env, ...env } });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no listening line from hearth-server')), 60000);
    server.stderr.on('data', (chunk) => {
      log += chunk.toString();
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    server.on('exit', (code) => reject(new Error(`hearth-server exited early (${code}):\n${log}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120000;
  let healthy = false;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${base}/health`)).status === 200) { healthy = true; break; }
    } catch (e) { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { server, port, base, healthy, log: () => log };
}

export async function stopServer(server) {
  server.kill('SIGTERM');
  if (server.exitCode === null && server.signalCode === null) await new Promise((r) => server.on('exit', r));
}
