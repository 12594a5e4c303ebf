// The library runs here: in a worker, a Blob reads synchronously by slices (FileReaderSync)
// and a URL by synchronous range requests, as h5chunk's synchronous API needs.
import init, { H5File } from "../pkg/h5chunk_wasm.js";

const ready = init();
let file = null;

/** Values shown at most for a dataset: the first ones of its first row. */
const FIRST = 100;
/** Objects the tree lists at most. */
const MAX_NODES = 10000;

function tree(path, depth, budget) {
  if (depth > 64) return [];
  return file.children(path).slice(0, Math.max(0, budget.left)).map((c) => {
    budget.left -= 1;
    if (c.kind !== "group") return c;
    try {
      return { ...c, children: tree(c.path, depth + 1, budget) };
    } catch (e) {
      return { ...c, kind: "other", note: String(e.message ?? e) };
    }
  });
}

// BigInts (64-bit integers) and typed arrays as plain numbers for the page.
const plain = (x) => (typeof x === "string" ? x : Array.from(x, (v) => (typeof v === "bigint" ? Number(v) : v)));

function show(path) {
  if (!file.isDataset(path)) return { path, kind: "group", attrs: file.attrs(path).map((a) => ({ ...a, values: a.values && plain(a.values) })) };
  const info = file.info(path);
  const rank = info.shape.length;
  let values = [];
  let start = [];
  let count = [];
  if (rank === 0) {
    values = plain(file.read(path));
  } else if (info.shape.every((n) => n > 0)) {
    start = info.shape.map(() => 0);
    count = info.shape.map((n, i) => (i === rank - 1 ? Math.min(n, FIRST) : 1));
    try {
      const v = file.read(path, start, count);
      values = Array.isArray(v) ? v : plain(v);
    } catch (e) {
      values = null;
      info.readError = String(e.message ?? e);
    }
  }
  return { path, kind: "dataset", info, start, count, values, attrs: file.attrs(path).map((a) => ({ ...a, values: a.values && plain(a.values) })) };
}

onmessage = async ({ data }) => {
  const { id, op } = data;
  try {
    await ready;
    let answer;
    if (op === "open") {
      file?.free();
      file = null;
      file = data.url ? H5File.openUrl(data.url) : H5File.openBlob(data.blob);
      answer = { name: file.name, tree: tree("/", 0, { left: MAX_NODES }) };
    } else if (op === "show") {
      answer = show(data.path);
    } else if (op === "read") {
      // A hyperslab (the whole dataset by default): its length and sum, not its values.
      const v = file.read(data.path, data.start, data.count, data.step);
      let sum = 0;
      for (const x of v) sum += Number(x);
      answer = { length: v.length, sum };
    } else if (op === "refresh") {
      answer = { shape: file.refresh(data.path), ...show(data.path) };
    } else {
      throw new Error(`no such request: ${op}`);
    }
    postMessage({ id, ok: true, answer, requests: file.requests, bytesFetched: file.bytesFetched });
  } catch (e) {
    postMessage({ id, ok: false, error: String(e?.message ?? e) });
  }
};
