// h5chunk's asynchronous URL reads: the library reads synchronously from a `UrlCache`; an
// operation that needs bytes not fetched yet notes the ranges and throws, and this loop
// fetches them with `fetch` (Range requests, concurrently), supplies them and runs the
// operation again until it needs nothing more. No synchronous request, so it runs on a page as
// well as in a worker. Each operation costs a few rounds (the metadata it walks, level by
// level); what was fetched stays cached for the next ones.
import init, { H5File, UrlCache } from "./h5chunk_wasm.js";

export { init as default, init };

/** Rounds one operation may take before it is refused (a selection larger than the cache). */
const MAX_ROUNDS = 10000;

/** One range request: the bytes and the resource's size (from Content-Range). */
async function fetchRange(url, start, end) {
  const r = await fetch(url, { headers: { Range: `bytes=${start}-${end - 1}` }, cache: "no-store" });
  if (r.status === 416) return { bytes: new Uint8Array(0), size: 0 };
  if (r.status !== 206) {
    throw new Error(
      r.status === 200 ? `${url}: the server ignores Range requests (it sent the whole resource)` : `${url}: HTTP ${r.status}`,
    );
  }
  const size = Number((r.headers.get("Content-Range") ?? "").split("/").pop());
  if (!Number.isSafeInteger(size)) {
    throw new Error(`${url}: a range answer without the size in Content-Range (a cross-origin server must expose it)`);
  }
  return { bytes: new Uint8Array(await r.arrayBuffer()), size };
}

/** Fetch what `cache` waits for. */
async function fill(cache) {
  const flat = cache.pending();
  const asks = [];
  for (let i = 0; i + 1 < flat.length; i += 2) asks.push([flat[i], flat[i + 1]]);
  const answers = await Promise.all(asks.map(([a, b]) => fetchRange(cache.url, a, b)));
  asks.forEach(([a], i) => cache.supply(a, answers[i].bytes, answers[i].size));
}

/** Run `op` (synchronous, reading `cache`) until it needs no more bytes; its result. */
async function settle(cache, op) {
  for (let round = 0; ; round++) {
    let result;
    let error = null;
    try {
      result = op();
    } catch (e) {
      error = e;
    }
    if (cache.pendingCount === 0) {
      cache.settle();
      if (error) throw error;
      return result;
    }
    if (round >= MAX_ROUNDS) throw new Error(`${cache.url}: the operation still needs bytes after ${MAX_ROUNDS} rounds`);
    await fill(cache);
  }
}

/** An HDF5 file at a URL read by asynchronous range requests: `H5File`'s methods, each a Promise. */
export class AsyncH5File {
  constructor(file, cache) {
    this.file = file;
    this.cache = cache;
    // One operation at a time: calls made together wait their turn, so none re-fetches what
    // another is fetching.
    this.queue = Promise.resolve();
  }

  #run(op) {
    const next = this.queue.then(() => settle(this.cache, op));
    this.queue = next.catch(() => {});
    return next;
  }

  /** Open `url` (the server must answer Range with 206 and, across origins, expose Content-Range). */
  static async open(url) {
    const cache = new UrlCache(url);
    await fill(cache);
    const file = await settle(cache, () => H5File.openCache(cache));
    return new AsyncH5File(file, cache);
  }

  get name() { return this.file.name; }
  /** Range requests made so far. */
  get requests() { return this.cache.requests; }
  /** Bytes those requests returned. */
  get bytesFetched() { return this.cache.bytesFetched; }

  children(path) { return this.#run(() => this.file.children(path)); }
  attrs(path) { return this.#run(() => this.file.attrs(path)); }
  isDataset(path) { return this.#run(() => this.file.isDataset(path)); }
  info(path) { return this.#run(() => this.file.info(path)); }
  read(path, start, count, step) { return this.#run(() => this.file.read(path, start, count, step)); }

  /** The dataset at `path` read again from the server (a file being written); its shape. */
  refresh(path) {
    const next = this.queue.then(async () => {
      this.cache.reset();
      await fill(this.cache);
      return settle(this.cache, () => this.file.refresh(path));
    });
    this.queue = next.catch(() => {});
    return next;
  }

  free() {
    this.file.free();
    this.cache.free();
  }
}
