// The retrieval debug page: run /api/retrieval/explain and show every stage of the trace.
//
// Explain (the button, or Ctrl+Enter / Cmd+Enter in the query) sends the query with the stage
// switches, the scoring controls (fusion, min score, channel weights; empty = the server's
// settings) and the document whitelist. When the answer is shown, the focus moves to the
// results heading (scrolled into view: on a phone the results come right after the search card)
// and a polite live region says "5 results in 23 ms". A language switch re-renders all of it.
// The metadata filter editor (filtereditor.js) adds `filter`; a filter the server refuses is
// shown under the editor.
import { api, describe } from "./api.js";
import { initKeyControl } from "./auth.js";
import { h, say } from "./dom.js";
import { DocPicker } from "./docpicker.js";
import { FilterEditor } from "./filtereditor.js";
import { EvalView } from "./evalview.js";
import { t, translatePage } from "./i18n.js";
import { KbDefaults } from "./kbdefaults.js";
import { LabelledSets } from "./labelsets.js";
import "./strings/debug.js";
import { restoreForm } from "./rerun.js";
import { RetrievalTesting } from "./testing.js";
import { traceSections } from "./trace.js";
import { Uploader } from "./upload.js";

const $ = (id) => document.getElementById(id);

// the bounds of the API's SearchBody (src/ragsift/api/schemas.py)
const TOP_K = [1, 200];
const MIN_SCORE = [-1e6, 1e6];
const WEIGHT = [0, 1000];
const VERSION_MAX = 2 ** 31 - 1;

translatePage();

const kbSelect = $("kb");
const picker = new DocPicker({
  list: $("doc-list"), filter: $("doc-filter"), count: $("doc-count"),
  message: $("doc-limit-message"), clear: $("doc-clear"),
});
const filterEditor = new FilterEditor($("meta-filter"));
const kbDefaults = new KbDefaults(kbSelect.closest("label"));

let kbs = [];
let listFailed = false;
// the last explained search: {out, request, clientMs}, re-rendered on a language switch
let shown = null;
// a history re-run's options the form cannot show, sent with that re-run only (rerun.js)
let carried = {};
// messages shown by this page, as [key, params], said again on a language switch
const messages = new Map();

function sayKey(node, key, params = {}) {
  if (key) messages.set(node, [key, params]);
  else messages.delete(node);
  say(node, key ? t(key, params) : "");
}

function renderKbOptions() {
  const value = kbSelect.value;
  kbSelect.replaceChildren(...kbs.map((kb) => h("option", { value: kb.id },
    t("debug.kb.option", { name: kb.name, ready: kb.ready, total: kb.documents }))));
  if (kbs.some((kb) => kb.id === value)) kbSelect.value = value;
}

async function loadKbs(selectId) {
  const error = $("search-error");
  const previous = selectId || kbSelect.value || new URLSearchParams(location.search).get("kb");
  try {
    kbs = await api("/api/kbs");
    if (listFailed) sayKey(error, ""); // e.g. a key was entered
    listFailed = false;
  } catch (failure) {
    kbs = [];
    listFailed = true;
    sayKey(error, "debug.error.listKbs", { reason: describe(failure) });
  }
  renderKbOptions();
  if (kbs.some((kb) => kb.id === previous)) kbSelect.value = previous;
  $("kb-empty").hidden = kbs.length > 0;
  await Promise.all([picker.load(kbSelect.value), filterEditor.load(kbSelect.value),
    testing.refresh(), kbDefaults.load(kbSelect.value), labelledSets.load()]);
}

/** A history entry: its query and options back in the form, run again (recorded again). */
function rerun(record) {
  carried = restoreForm(record, { picker, filterEditor });
  kbDefaults.mark();
  $("search-form").requestSubmit();
}

/** The number in `input`, null when it is empty, NaN when it is not a number. */
function numberIn(input) {
  if (input.validity.badInput) return Number.NaN;
  return input.value.trim() === "" ? null : Number(input.value);
}

/** The request body, or {error: [key, params], input} naming the first invalid field, or
 * {error: null} when the filter editor has said what is wrong. */
function searchBody() {
  const topK = numberIn($("top-k"));
  if (!Number.isInteger(topK) || topK < TOP_K[0] || topK > TOP_K[1]) {
    return { error: ["debug.error.topK", { min: TOP_K[0], max: TOP_K[1] }], input: $("top-k") };
  }
  const body = {
    kb_id: kbSelect.value,
    query: $("query").value,
    mode: $("mode").value,
    top_k: topK,
    rewrite: $("rewrite").checked,
    rerank: $("rerank").checked,
    small2big: $("small2big").checked,
    auto_merge: $("auto-merge").checked,
  };
  if ($("fusion").value) body.fusion = $("fusion").value;
  const minScore = numberIn($("min-score"));
  if (minScore !== null) {
    if (!Number.isFinite(minScore) || minScore < MIN_SCORE[0] || minScore > MIN_SCORE[1]) {
      return { error: ["debug.error.minScore", { min: "-1000000", max: "1000000" }],
        input: $("min-score") };
    }
    body.min_score = minScore;
  }
  for (const [id, field] of [["dense-weight", "dense_weight"], ["sparse-weight", "sparse_weight"]]) {
    const weight = numberIn($(id));
    if (weight === null) continue;
    if (!Number.isFinite(weight) || weight < WEIGHT[0] || weight > WEIGHT[1]) {
      return { error: ["debug.error.weight", { min: WEIGHT[0], max: WEIGHT[1] }], input: $(id) };
    }
    body[field] = weight;
  }
  if (body.dense_weight === 0 && body.sparse_weight === 0) {
    return { error: ["debug.error.weightsZero", {}], input: $("dense-weight") };
  }
  const version = numberIn($("kb-version"));
  if (version !== null) {
    if (!Number.isInteger(version) || version < 0 || version > VERSION_MAX) {
      return { error: ["debug.compare.badVersion", {}], input: $("kb-version") };
    }
    body.kb_version = version;
  }
  const ids = picker.documentIds();
  if (ids) body.document_ids = ids;
  const filter = filterEditor.checked();
  if (filter === undefined) return { error: null }; // said by the editor
  if (filter) body.filter = filter;
  return { body: { ...carried, ...body } };
}

function summaryText() {
  if (!shown) return "";
  const { out, clientMs } = shown;
  const total = (out.trace.timings_ms || {}).total;
  const ms = Math.round(total ?? clientMs);
  const count = out.results.length;
  const key = count === 0 ? "debug.results.summaryNone"
    : count === 1 ? "debug.results.summaryOne" : "debug.results.summaryMany";
  const text = t(key, { count, ms });
  const faq = (out.faq || []).length;
  if (!faq) return text;
  return t(faq === 1 ? "debug.results.withFaqOne" : "debug.results.withFaqMany",
    { summary: text, count: faq });
}

function render() {
  const results = $("results");
  if (!shown) return;
  const { out, request } = shown;
  results.replaceChildren(...traceSections(out.trace, out.results, out.faq, { request }));
  results.hidden = false;
  $("results-empty").hidden = true;
  $("results-summary").textContent = summaryText();
}

/** Focus the results heading, scrolled to the top of the screen unless it is in its upper
 * part already (a phone: the results are below the search card). */
function showResults() {
  const heading = $("results-title");
  const top = heading.getBoundingClientRect().top;
  if (top < 0 || top > window.innerHeight * 0.4) heading.scrollIntoView({ block: "start" });
  heading.focus({ preventScroll: true });
}

function clearInvalid() {
  for (const input of document.querySelectorAll("#search-form [aria-invalid]")) {
    input.removeAttribute("aria-invalid");
  }
}

async function explain(event) {
  event.preventDefault();
  const error = $("search-error");
  const button = $("search-button");
  if (button.disabled) return; // Ctrl+Enter while a search runs
  clearInvalid();
  if (!kbSelect.value) return sayKey(error, "debug.error.noKb");
  if (!$("query").value.trim()) {
    $("query").setAttribute("aria-invalid", "true");
    return sayKey(error, "debug.error.noQuery");
  }
  const built = searchBody();
  if (built.error === null) return sayKey(error, "");
  if (built.error) {
    built.input.setAttribute("aria-invalid", "true");
    built.input.focus();
    return sayKey(error, ...built.error);
  }
  sayKey(error, "");
  carried = {};
  button.disabled = true;
  const results = $("results");
  const status = $("results-summary");
  results.setAttribute("aria-busy", "true");
  status.textContent = t("debug.results.searching");
  const started = performance.now();
  try {
    // recorded in the KB's query history (retrieval testing)
    const out = await api("/api/retrieval/explain?history=true",
      { method: "POST", json: built.body });
    shown = { out, request: built.body, clientMs: performance.now() - started };
    render();
    showResults();
    testing.refresh();
  } catch (failure) {
    status.textContent = "";
    if (filterEditor.claims(failure)) sayKey(error, "");
    else sayKey(error, "debug.error.searchFailed", { reason: describe(failure) });
  } finally {
    results.removeAttribute("aria-busy");
    button.disabled = false;
  }
}

async function createKb(event) {
  event.preventDefault();
  const error = $("kb-error");
  const name = $("kb-name").value.trim();
  if (!name) return sayKey(error, "debug.error.noName");
  try {
    const kb = await api("/api/kbs", { method: "POST", json: { name } });
    sayKey(error, "");
    $("kb-name").value = "";
    await loadKbs(kb.id);
  } catch (failure) {
    sayKey(error, "debug.error.createFailed", { reason: describe(failure) });
  }
}

/** Ctrl+Enter (Cmd+Enter on a Mac) in the query runs Explain. */
function onQueryKey(event) {
  if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey) || event.isComposing) return;
  event.preventDefault();
  $("search-form").requestSubmit();
}

const testing = new RetrievalTesting({
  kbId: () => kbSelect.value, query: () => $("query").value,
  documentIds: () => picker.documentIds(), rerun,
});
const labelledSets = new LabelledSets({ kbId: () => kbSelect.value });
const evalView = new EvalView({ kbId: () => kbSelect.value,
  setId: () => labelledSets.selected() });
const uploader = new Uploader({
  form: $("upload-form"), input: $("upload-files"), button: $("upload-button"),
  error: $("upload-error"), list: $("upload-status"), kbId: () => kbSelect.value,
  drop: $("upload-drop"), clear: $("upload-clear"),
  onSettled: (doc) => {
    if (doc.status === "READY") loadKbs();
  },
});
initKeyControl($("key-control"), { onKeyEntered: () => loadKbs() });
kbSelect.addEventListener("change", () => {
  picker.load(kbSelect.value);
  filterEditor.load(kbSelect.value);
  testing.refresh();
  kbDefaults.load(kbSelect.value);
  labelledSets.load();
});
$("search-form").addEventListener("submit", explain);
$("query").addEventListener("keydown", onQueryKey);
$("kb-form").addEventListener("submit", createKb);
document.addEventListener("ragsift:language", () => {
  translatePage();
  renderKbOptions();
  for (const [node, [key, params]] of messages) say(node, t(key, params));
  render();
  uploader.relabel();
  picker.relabel();
  filterEditor.relabel();
  testing.relabel();
  evalView.relabel();
  kbDefaults.relabel();
  labelledSets.relabel();
});
loadKbs().then(() => document.body.setAttribute("data-ready", "true"));
