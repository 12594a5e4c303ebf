// h5chunk's wasm build (crates/wasm/pkg): a URL read by range requests in blocks
// through its cache (synchronous XHR, as its synchronous API needs: hence a worker).
import init, { H5File } from "/pkg/h5chunk_wasm.js";

let file = null;

// Every object: its path and kind, group by group (what a tree view lists).
function tree(path, out) {
  for (const c of file.children(path)) {
    out.push([c.path, c.kind]);
    if (c.kind === "group") tree(c.path, out);
  }
  return out;
}

function sum(values) {
  let s = 0;
  for (const x of values) s += Number(x);
  return s;
}

onmessage = async ({ data }) => {
  const { id, op } = data;
  try {
    let answer;
    if (op === "init") {
      await init();
      answer = {};
    } else if (op === "tree") {
      file = H5File.openUrl(data.url);
      answer = { tree: tree("/", []) };
    } else if (op === "slice") {
      const v = file.read(data.path, data.start, data.count);
      answer = { elements: v.length, sum: sum(v) };
    } else {
      throw new Error(`no such request: ${op}`);
    }
    postMessage({ id, ok: true, answer, requests: file?.requests ?? 0, bytes: file?.bytesFetched ?? 0 });
  } catch (e) {
    postMessage({ id, ok: false, error: String(e?.message ?? e) });
  }
};
