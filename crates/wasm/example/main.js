// The page: asks the worker (worker.js) to open a file and to show an object, and draws the
// answers. Nothing here reads the file.
const worker = new Worker(new URL("worker.js", import.meta.url), { type: "module" });
const waiting = new Map();
let nextId = 1;
worker.onmessage = ({ data }) => {
  const w = waiting.get(data.id);
  waiting.delete(data.id);
  if (data.ok) w.resolve(data); else w.reject(new Error(data.error));
};
const ask = (msg) => new Promise((resolve, reject) => {
  const id = nextId++;
  waiting.set(id, { resolve, reject });
  worker.postMessage({ ...msg, id });
});

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...kids) => {
  const e = Object.assign(document.createElement(tag), props);
  for (const k of kids) e.append(k);
  return e;
};

function status(text, error = false) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}

function drawTree(nodes) {
  const ul = el("ul");
  for (const n of nodes) {
    const label = el("span", { textContent: n.name, title: n.note ?? n.path });
    const li = el("li", {}, label);
    li.dataset.path = n.path;
    li.dataset.kind = n.kind;
    if (n.kind !== "other") label.onclick = () => select(n.path);
    if (n.children) li.append(drawTree(n.children));
    ul.append(li);
  }
  return ul;
}

function row(name, value) {
  return el("tr", {}, el("th", { textContent: name }), el("td", { textContent: value }));
}

const dims = (d) => `(${d.map((n) => (n === null ? "∞" : n)).join(", ")})`;

async function select(path) {
  document.querySelectorAll("#tree span.selected").forEach((s) => s.classList.remove("selected"));
  document.querySelector(`#tree li[data-path="${CSS.escape(path)}"] > span`)?.classList.add("selected");
  const detail = $("detail");
  detail.dataset.path = "";
  try {
    const { answer: a } = await ask({ op: "show", path });
    detail.replaceChildren(el("h2", { textContent: path }));
    const meta = el("table");
    if (a.kind === "dataset") {
      const i = a.info;
      meta.append(
        row("type", `${i.dtype} (${i.class})`),
        row("shape", dims(i.shape)),
        row("max shape", dims(i.maxshape)),
        row("layout", i.layout),
        row("chunks", i.chunks ? dims(i.chunks) : "–"),
        row("index", i.index ?? "–"),
        row("filters", i.filters.join(", ") || "none"),
      );
    }
    detail.append(meta);
    if (a.attrs.length) {
      const t = el("table", {}, el("tr", {}, el("th", { textContent: "attribute" }), el("th", { textContent: "value" })));
      for (const at of a.attrs) t.append(row(at.name, at.text));
      detail.append(el("h3", { textContent: "Attributes" }), t);
    }
    if (a.kind === "dataset") {
      const pre = el("pre", { id: "values" });
      if (a.values === null) {
        pre.textContent = a.info.readError;
      } else {
        const where = a.count.length ? `[${a.count.map((c, k) => (k === a.count.length - 1 ? `0:${c}` : "0")).join(", ")}]` : "";
        detail.append(el("h3", { textContent: `First values ${where}` }));
        pre.textContent = a.values.join(", ");
      }
      pre.dataset.values = JSON.stringify(a.values);
      detail.append(pre);
    }
    detail.dataset.path = path;
  } catch (e) {
    detail.replaceChildren(el("p", { className: "error", textContent: e.message }));
    detail.dataset.path = path;
    detail.dataset.error = e.message;
  }
}

async function open(msg, label) {
  status(`Opening ${label}…`);
  document.body.dataset.state = "opening";
  try {
    const t0 = performance.now();
    const { answer, requests } = await ask({ op: "open", ...msg });
    const ms = Math.round(performance.now() - t0);
    $("tree").replaceChildren(drawTree(answer.tree));
    $("detail").replaceChildren();
    status(`${answer.name}: opened in ${ms} ms${requests ? `, ${requests} range requests` : ""}`);
    document.body.dataset.state = "open";
    const first = document.querySelector('#tree li[data-kind=dataset]');
    if (first) select(first.dataset.path);
  } catch (e) {
    status(e.message, true);
    document.body.dataset.state = "error";
  }
}

$("file").addEventListener("change", (e) => {
  const f = e.target.files[0];
  if (f) open({ blob: f }, f.name);
});
$("open-url").addEventListener("click", () => {
  const u = $("url").value.trim();
  if (u) open({ url: new URL(u, location.href).href }, u);
});
// For scripts (the browser test): show an object by its path; ask the worker directly
// (`{ op: "refresh", path }` reads a dataset again, as a file a writer extends needs).
window.h5select = select;
window.h5ask = ask;
