// The playground's page: a CodeMirror editor of the .weave text on the left, the timeline,
// figures, comparison and downloads on the right. Every edit and every control asks the server
// (`pipeweave serve`, the same origin) to build the plan; the answer's diagnostics go into the
// editor at their spans, its SVG into the page. Nothing is loaded from anywhere else.

import { EditorState } from "@codemirror/state";
import {
  EditorView,
  keymap,
  lineNumbers,
  highlightActiveLine,
  highlightActiveLineGutter,
  drawSelection,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab, isolateHistory } from "@codemirror/commands";
import { HighlightStyle, syntaxHighlighting, bracketMatching, indentUnit } from "@codemirror/language";
import { setDiagnostics, lintGutter } from "@codemirror/lint";
import { tags } from "@lezer/highlight";
import grammar from "../../../../editors/vscode/syntaxes/weave.tmLanguage.json";
import { textmateLanguage } from "./textmate.js";

const $ = (id) => document.getElementById(id);

// How long the page waits after a keystroke before it asks for a build: long enough to skip the
// middle of a word, short enough that the timeline follows the typing.
const DEBOUNCE_MS = 40;

const highlight = HighlightStyle.define([
  { tag: tags.comment, color: "#6a737d", fontStyle: "italic" },
  { tag: tags.string, color: "#22863a" },
  { tag: [tags.escape, tags.special(tags.string)], color: "#e36209" },
  { tag: [tags.controlKeyword, tags.definitionKeyword, tags.logicOperator], color: "#d73a49", fontWeight: "bold" },
  { tag: tags.keyword, color: "#6f42c1", fontWeight: "bold" },
  { tag: [tags.typeName, tags.atom, tags.bool], color: "#005cc5" },
  { tag: tags.number, color: "#005cc5" },
  { tag: tags.function(tags.variableName), color: "#6f42c1" },
  { tag: tags.standard(tags.variableName), color: "#b31d28", fontWeight: "bold" },
  { tag: tags.definition(tags.variableName), color: "#e36209" },
  { tag: tags.operator, color: "#d73a49" },
]);

const page = {
  view: null,
  session: null,
  params: [],
  paramKey: "",
  sequence: 0,
  pending: null,
  timer: 0,
  editedAt: 0,
  builds: 0,
};

function setStatus(text, kind) {
  const status = $("status");
  status.textContent = text;
  status.dataset.kind = kind || "";
}

/** The controls as the server's `plan` object. */
function controls() {
  const plan = {
    text: page.view.state.doc.toString(),
    ranks: numberOf($("ranks")),
    microbatches: numberOf($("microbatches")),
    stages_per_rank: null,
    settings: {},
    costs: $("costs").value.trim(),
    spec: $("spec").value,
    forward_only: $("forward-only").checked,
  };
  for (const p of page.params) {
    const input = document.querySelector(`[data-param="${CSS.escape(p.name)}"]`);
    if (!input || input.value === "") continue;
    if (p.name === "v") plan.stages_per_rank = numberOf(input);
    else plan.settings[p.name] = input.value;
  }
  const v = $("stages-per-rank");
  if (!v.disabled && v.value !== "") plan.stages_per_rank = numberOf(v);
  return plan;
}

function numberOf(input) {
  const n = Number(input.value);
  return input.value === "" || !Number.isFinite(n) ? null : Math.trunc(n);
}

function picked() {
  return [...document.querySelectorAll("#picks input:checked")].map((i) => i.value);
}

/** Asks for a build soon (after `delay` ms), dropping one asked for before. */
function schedule(delay) {
  clearTimeout(page.timer);
  page.timer = setTimeout(buildNow, delay);
}

async function buildNow() {
  const sequence = ++page.sequence;
  const editedAt = page.editedAt;
  if (page.pending) page.pending.abort();
  const abort = new AbortController();
  page.pending = abort;
  setStatus("building…", "busy");
  let answer;
  try {
    const response = await fetch("/api/build", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ plan: controls(), compare: picked() }),
      signal: abort.signal,
    });
    answer = await response.json();
    if (!response.ok) {
      if (sequence === page.sequence) showError(answer.error || `the server answered ${response.status}`);
      return;
    }
  } catch (e) {
    if (e.name !== "AbortError" && sequence === page.sequence) {
      showError(`cannot reach the playground's server: ${e.message}`);
    }
    return;
  }
  if (sequence !== page.sequence) return;
  page.pending = null;
  show(answer, editedAt);
}

function showError(message) {
  setStatus(message, "error");
  $("problems").textContent = message;
}

/** The server's answer in the page. */
function show(answer, editedAt) {
  const doc = page.view.state.doc;
  const diagnostics = answer.diagnostics
    .filter((d) => d.place)
    .map((d) => {
      let from = Math.min(d.place.from, doc.length);
      let to = Math.min(Math.max(d.place.to, from), doc.length);
      if (from === to && to < doc.length) to += 1;
      const words = [d.message];
      if (d.label) words.push(`(${d.label})`);
      const more = [...d.notes.map((n) => `note: ${n}`)];
      if (d.help) more.push(`help: ${d.help}`);
      return {
        from,
        to,
        severity: d.severity === "note" ? "info" : d.severity,
        message: [words.join(" "), ...more].join("\n"),
      };
    });
  page.view.dispatch(setDiagnostics(page.view.state, diagnostics));
  $("problems").textContent = answer.rendered;
  showParams(answer.params);
  $("description").textContent = answer.description || "";
  $("requires").textContent = answer.requires.length ? `requires: ${answer.requires.join("; ")}` : "";
  if (answer.ok) {
    drawSvg(answer.svg);
    const s = answer.summary;
    $("summary").textContent = s ? `${s.shape} · makespan ${s.makespan} · bubble ${s.bubble}` : "";
    showTables(answer.comparison, answer.comparison_notes);
    setStatus(`built in ${answer.took_ms.toFixed(1)} ms`, "ok");
    document.body.dataset.redrawMs = String(Math.round(performance.now() - editedAt));
  } else {
    const errors = answer.diagnostics.filter((d) => d.severity === "error").length;
    setStatus(errors === 1 ? "1 error" : `${errors} errors`, "error");
    $("timeline").classList.add("stale");
  }
  page.builds += 1;
  document.body.dataset.builds = String(page.builds);
  document.body.dataset.ok = String(answer.ok);
}

/** The timeline: the server's SVG, parsed as SVG (never as HTML) and put in place. */
function drawSvg(text) {
  const timeline = $("timeline");
  timeline.classList.remove("stale");
  const parsed = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = parsed.documentElement;
  if (svg.nodeName !== "svg") return;
  timeline.replaceChildren(document.importNode(svg, true));
}

function showTables(tables, notes) {
  const box = $("tables");
  box.replaceChildren();
  for (const t of tables) {
    const table = document.createElement("table");
    const caption = table.createCaption();
    caption.textContent = t.caption;
    const head = table.createTHead().insertRow();
    for (const h of t.header) {
      const th = document.createElement("th");
      th.textContent = h;
      head.appendChild(th);
    }
    const body = table.createTBody();
    for (const r of t.rows) {
      const row = body.insertRow();
      for (const c of r) row.insertCell().textContent = c;
    }
    box.appendChild(table);
  }
  for (const n of notes) {
    const p = document.createElement("p");
    p.className = "note";
    p.textContent = n;
    box.appendChild(p);
  }
}

/** The declared parameters as typed controls, kept (with their values) while they stay the same. */
function showParams(params) {
  const key = JSON.stringify(params);
  if (key === page.paramKey) return;
  const kept = {};
  for (const input of document.querySelectorAll("[data-param]")) kept[input.dataset.param] = input.value;
  page.paramKey = key;
  page.params = params;
  const box = $("params");
  box.replaceChildren();
  const v = $("stages-per-rank");
  v.disabled = !params.some((p) => p.name === "v");
  for (const p of params) {
    if (p.name === "v") {
      v.min = p.min ?? 1;
      if (p.max != null) v.max = p.max;
      v.placeholder = p.default ?? "";
      continue;
    }
    const label = document.createElement("label");
    label.title = [p.declared, p.help].filter(Boolean).join(": ");
    label.append(`${p.name} `);
    let input;
    if (p.kind === "int") {
      input = document.createElement("input");
      input.type = "number";
      if (p.min != null) input.min = p.min;
      if (p.max != null) input.max = p.max;
      if (p.step != null) input.step = p.step;
      input.placeholder = p.default ?? "";
    } else {
      input = document.createElement("select");
      const options = p.kind === "bool" ? ["true", "false"] : p.options;
      input.add(new Option(p.default != null ? `default (${p.default})` : "choose", ""));
      for (const o of options) input.add(new Option(o, o));
    }
    input.dataset.param = p.name;
    input.value = kept[p.name] ?? "";
    input.addEventListener("input", () => schedule(0));
    label.appendChild(input);
    box.appendChild(label);
  }
}

function fileNameOf(response, fallback) {
  const disposition = response.headers.get("Content-Disposition") || "";
  const m = /filename="([^"]+)"/.exec(disposition);
  return m ? m[1] : fallback;
}

async function download(format) {
  setStatus(`exporting ${format}…`, "busy");
  const response = await fetch("/api/export", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ plan: controls(), format }),
  });
  if (!response.ok) {
    const answer = await response.json();
    showError(answer.error);
    return;
  }
  const blob = await response.blob();
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = fileNameOf(response, `plan.${format}`);
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  setStatus(`downloaded ${link.download}`, "ok");
}

async function save() {
  if (!page.session.file) return true;
  const response = await fetch("/api/save", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ text: page.view.state.doc.toString() }),
  });
  const answer = await response.json();
  if (response.ok) setStatus(`saved ${answer.file} (${answer.bytes} bytes)`, "ok");
  else showError(answer.error);
  return true;
}

function fill(select, values, label) {
  for (const v of values) select.add(new Option(label ? label(v) : v, v.name ?? v));
}

async function start() {
  const response = await fetch("/api/session");
  const session = await response.json();
  if (!response.ok) {
    showError(session.error);
    return;
  }
  page.session = session;
  $("file").textContent = session.file ? session.file : "scratch (not saved)";
  $("save").hidden = !session.file;
  fill($("examples"), session.examples, (e) => e.name);
  fill($("spec"), session.specs);
  for (const e of session.examples) {
    const label = document.createElement("label");
    label.title = e.description;
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = e.name;
    box.addEventListener("change", () => schedule(0));
    label.append(box, ` ${e.name}`);
    $("picks").appendChild(label);
  }
  for (const f of session.formats) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = f.label;
    button.dataset.format = f.id;
    button.addEventListener("click", () => download(f.id));
    $("downloads").appendChild(button);
  }
  page.view = new EditorView({
    parent: $("editor"),
    state: EditorState.create({
      doc: session.text,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        highlightActiveLine(),
        drawSelection(),
        history(),
        bracketMatching(),
        indentUnit.of("  "),
        textmateLanguage(grammar),
        syntaxHighlighting(highlight),
        lintGutter(),
        keymap.of([{ key: "Mod-s", run: () => (save(), true) }, indentWithTab, ...defaultKeymap, ...historyKeymap]),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) {
            page.editedAt = performance.now();
            schedule(DEBOUNCE_MS);
          }
        }),
        EditorView.lineWrapping,
      ],
    }),
  });
  $("examples").addEventListener("change", (event) => {
    const example = session.examples.find((e) => e.name === event.target.value);
    event.target.value = "";
    if (!example) return;
    const doc = page.view.state.doc;
    // One transaction of its own in the history, never joined with the typing just before or
    // after it (CodeMirror joins adjacent changes within half a second): undo brings back
    // exactly the text that was there.
    page.view.dispatch({
      changes: { from: 0, to: doc.length, insert: example.text },
      annotations: isolateHistory.of("full"),
    });
    page.view.focus();
  });
  $("save").addEventListener("click", save);
  for (const id of ["ranks", "microbatches", "stages-per-rank", "costs", "spec", "forward-only"]) {
    $(id).addEventListener(id === "costs" ? "input" : "change", () => schedule(id === "costs" ? DEBOUNCE_MS : 0));
    if (id !== "costs" && id !== "spec" && id !== "forward-only") {
      $(id).addEventListener("input", () => schedule(0));
    }
  }
  page.editedAt = performance.now();
  buildNow();
}

start();
