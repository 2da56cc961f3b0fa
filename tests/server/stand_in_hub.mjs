// A stand-in for the Hugging Face hub on 127.0.0.1 for the pull tests: repository trees
// (GET /api/models/OWNER/NAME/tree/main, with each file's size and LFS SHA-256) and downloads
// (GET /OWNER/NAME/resolve/main/PATH) that honour Range, come in throttled chunks so progress
// shows, and can be cut midway; every request is logged.
import http from 'node:http';
import { createHash } from 'node:crypto';

export class StandInHub {
  // chunkBytes a write, delayMs between writes: a 1 MB file takes about a second.
  constructor({ chunkBytes = 64 * 1024, delayMs = 40 } = {}) {
    this.chunkBytes = chunkBytes;
    this.delayMs = delayMs;
    this.repos = new Map(); // 'owner/name' -> Map(path -> file)
    this.requests = [];     // { path, range }
    this.server = http.createServer((req, res) => this.#answer(req, res));
    this.sockets = new Set();
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async start() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  async stop() {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  // A file of `repo`; the returned object's knobs change how later downloads of it go:
  // cutAfter (bytes): a download sends the full Content-Length, then this many bytes of its body
  // and closes the connection; cutOnce: only the next download is cut; withdrawnAfterCut: once
  // cut, the file answers 404 (as if removed from the repository) until it is set back to false.
  addFile(repo, path, content) {
    if (!this.repos.has(repo)) this.repos.set(repo, new Map());
    const file = { content, sha256: createHash('sha256').update(content).digest('hex'),
                   cutAfter: 0, cutOnce: false, withdrawnAfterCut: false, withdrawn: false };
    this.repos.get(repo).set(path, file);
    return file;
  }

  downloads(path) {
    return this.requests.filter((r) => r.path.includes('/resolve/') && (!path || r.path.endsWith(`/${path}`)));
  }

  #json(res, status, body) {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  #answer(req, res) {
    const url = new URL(req.url, 'http://hub');
    const path = decodeURIComponent(url.pathname);
    this.requests.push({ path, range: req.headers.range ?? '' });
    if (req.method !== 'GET') return this.#json(res, 405, { error: 'GET only' });
    let m = path.match(/^\/api\/models\/([^/]+\/[^/]+)\/tree\/main$/);
    if (m) {
      const files = this.repos.get(m[1]);
      if (!files) return this.#json(res, 404, { error: 'Repository not found' });
      const entries = [{ type: 'file', oid: 'f00d', size: 24, path: 'README.md' }];
      for (const [p, f] of files)
        entries.push({ type: 'file', oid: 'beef', size: f.content.length, path: p,
                       lfs: { oid: f.sha256, size: f.content.length, pointerSize: 134 } });
      return this.#json(res, 200, entries);
    }
    m = path.match(/^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/);
    const file = m && this.repos.get(m[1])?.get(m[2]);
    if (!file || file.withdrawn) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      return res.end('Entry not found');
    }
    this.#download(req, res, file);
  }

  #download(req, res, file) {
    const size = file.content.length;
    let start = 0;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (range) {
      start = Number(range[1]);
      if (start >= size) {
        res.writeHead(416, { 'Content-Range': `bytes */${size}` });
        return res.end();
      }
      res.writeHead(206, { 'Content-Type': 'application/octet-stream', 'Content-Length': size - start,
                           'Content-Range': `bytes ${start}-${size - 1}/${size}` });
    } else {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': size });
    }
    // Where this response stops: the file's end, or the cut.
    const end = file.cutAfter > 0 ? Math.min(size, start + file.cutAfter) : size;
    const cut = end < size;
    if (cut && file.cutOnce) file.cutAfter = 0;
    let at = start;
    const next = () => {
      if (res.destroyed) return;
      if (at >= end) {
        if (!cut) return res.end();
        if (file.withdrawnAfterCut) file.withdrawn = true;
        return res.socket?.destroy(); // fewer bytes than Content-Length said, then the connection ends
      }
      const n = Math.min(this.chunkBytes, end - at);
      const chunk = file.content.subarray(at, at + n);
      at += n;
      res.write(chunk, () => setTimeout(next, this.delayMs));
    };
    next();
  }
}
