// The retrieval debug page: run /api/retrieval/explain and show every stage of the trace.
import { api, describe } from "./api.js";
import { initKeyControl } from "./auth.js";
import { h, say } from "./dom.js";
import { DocPicker } from "./docpicker.js";
import { traceSections } from "./trace.js";
import { Uploader } from "./upload.js";

const $ = (id) => document.getElementById(id);

const kbSelect = $("kb");
const picker = new DocPicker({
  list: $("doc-list"), filter: $("doc-filter"), count: $("doc-count"),
  message: $("doc-limit-message"), clear: $("doc-clear"),
});

const LIST_FAILED = "Could not list knowledge bases: ";

async function loadKbs(selectId) {
  let kbs = [];
  const error = $("search-error");
  try {
    kbs = await api("/api/kbs");
    if (error.textContent.startsWith(LIST_FAILED)) say(error, ""); // e.g. a key was entered
  } catch (failure) {
    say(error, LIST_FAILED + describe(failure));
  }
  const previous = selectId || kbSelect.value || new URLSearchParams(location.search).get("kb");
  kbSelect.replaceChildren(...kbs.map((kb) =>
    h("option", { value: kb.id }, `${kb.name} (${kb.ready}/${kb.documents} ready)`)));
  if (kbs.some((kb) => kb.id === previous)) kbSelect.value = previous;
  $("kb-empty").hidden = kbs.length > 0;
  await picker.load(kbSelect.value);
}

function searchBody() {
  const body = {
    kb_id: kbSelect.value,
    query: $("query").value,
    mode: $("mode").value,
    top_k: Number($("top-k").value),
    rewrite: $("rewrite").checked,
    rerank: $("rerank").checked,
    small2big: $("small2big").checked,
    auto_merge: $("auto-merge").checked,
  };
  const ids = picker.documentIds();
  if (ids) body.document_ids = ids;
  return body;
}

async function explain(event) {
  event.preventDefault();
  const error = $("search-error");
  if (!kbSelect.value) return say(error, "Choose or create a knowledge base first.");
  if (!$("query").value.trim()) return say(error, "Type a query.");
  const topK = Number($("top-k").value);
  if (!Number.isInteger(topK) || topK < 1 || topK > 200) {
    return say(error, "Top k must be a whole number from 1 to 200.");
  }
  say(error, "");
  const button = $("search-button");
  button.disabled = true;
  const results = $("results");
  results.setAttribute("aria-busy", "true");
  try {
    const out = await api("/api/retrieval/explain", { method: "POST", json: searchBody() });
    results.replaceChildren(...traceSections(out.trace, out.results, out.faq));
    results.hidden = false;
    $("results-empty").hidden = true;
  } catch (failure) {
    say(error, `Search failed: ${describe(failure)}`);
  } finally {
    results.removeAttribute("aria-busy");
    button.disabled = false;
  }
}

async function createKb(event) {
  event.preventDefault();
  const error = $("kb-error");
  const name = $("kb-name").value.trim();
  if (!name) return say(error, "Type a name.");
  try {
    const kb = await api("/api/kbs", { method: "POST", json: { name } });
    say(error, "");
    $("kb-name").value = "";
    await loadKbs(kb.id);
  } catch (failure) {
    say(error, describe(failure));
  }
}

new Uploader({
  form: $("upload-form"), input: $("upload-files"), button: $("upload-button"),
  error: $("upload-error"), list: $("upload-status"), kbId: () => kbSelect.value,
  onSettled: (doc) => {
    if (doc.status === "READY") loadKbs();
  },
});
initKeyControl($("key-control"), { onKeyEntered: () => loadKbs() });
kbSelect.addEventListener("change", () => picker.load(kbSelect.value));
$("search-form").addEventListener("submit", explain);
$("kb-form").addEventListener("submit", createKb);
loadKbs().then(() => document.body.setAttribute("data-ready", "true"));
