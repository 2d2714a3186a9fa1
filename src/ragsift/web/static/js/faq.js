// The FAQ page: the FAQ entries of a knowledge base, searched, edited, deleted and imported.
//
// Which of it the server supports is read from /openapi.json (faqapi.js): with the list
// endpoint every entry is shown and the search box filters them in the page; without it the
// search runs the FAQ channel of /api/retrieval/explain (the 50 entries closest to the
// query). Edit and delete show only where the server has those endpoints.
import { describe } from "./api.js";
import { initKeyControl } from "./auth.js";
import { openDialog } from "./dialog.js";
import { FaqApi } from "./faqapi.js";
import { h, say } from "./dom.js";
import { plural, timeNode } from "./format.js";
import { KbPicker, keepKbInLinks } from "./kbs.js";

const $ = (id) => document.getElementById(id);
const list = $("faq-list");
let faq = new FaqApi();
let entries = []; // what the list (or the last search) returned
let generation = 0;
let lastQuery = "";

const picker = new KbPicker({
  select: $("kb"), empty: $("kb-empty"), error: $("kb-error"), onChange: () => showKb(),
});

function announce(message) {
  say($("faq-notice"), message);
}

function matches(entry, wanted) {
  if (!wanted) return true;
  return [entry.question, entry.answer, entry.source || ""]
    .some((text) => String(text).toLowerCase().includes(wanted));
}

function entryItem(entry) {
  const title = entry.question;
  const actions = [];
  if (faq.canUpdate) {
    actions.push(h("button", { type: "button", class: "secondary", dataset: { action: "edit" },
      "aria-label": `Edit the entry: ${title}`, onclick: () => edit(entry) }, "Edit"));
  }
  if (faq.canDelete) {
    actions.push(h("button", { type: "button", class: "danger", dataset: { action: "delete" },
      "aria-label": `Delete the entry: ${title}`, onclick: () => remove(entry) }, "Delete"));
  }
  const roles = entry.allowed_roles && entry.allowed_roles.length
    ? `roles: ${entry.allowed_roles.join(", ")}` : null;
  const facts = [
    entry.source ? `source: ${entry.source}` : "no source",
    entry.tenant_id ? `tenant: ${entry.tenant_id}` : null,
    entry.dataset_id ? `dataset: ${entry.dataset_id}` : null,
    entry.visibility ? `visibility: ${entry.visibility}` : null,
    roles,
    entry.rank ? `rank ${entry.rank}` : null,
    entry.direct_answer ? "direct answer" : null,
  ].filter(Boolean).join(" · ");
  return h("li", { class: "faq-entry", dataset: { faqId: entry.id } },
    h("h3", { class: "faq-question", dataset: { part: "question" } }, title),
    h("p", { class: "faq-answer", dataset: { part: "answer" } }, entry.answer),
    h("p", { class: "small muted", dataset: { part: "facts" } }, facts,
      entry.created_at ? [" · added ", timeNode(entry.created_at)] : null),
    actions.length ? h("div", { class: "actions" }, actions) : null);
}

function render() {
  const kb = picker.current();
  const wanted = faq.canList ? $("faq-search").value.trim().toLowerCase() : "";
  const shown = entries.filter((entry) => matches(entry, wanted));
  list.replaceChildren(...shown.map(entryItem));
  const empty = $("faq-empty");
  if (!kb) say(empty, "Choose a knowledge base.");
  else if (shown.length) say(empty, "");
  else if (faq.canList) {
    say(empty, entries.length ? "No entry matches the filter."
      : "No FAQ entry in this knowledge base yet: import a file.");
  } else {
    say(empty, lastQuery ? "No FAQ entry found for this search."
      : (kb.faq ? "Type a search to find entries." : "No FAQ entry in this knowledge base yet: "
        + "import a file."));
  }
  $("faq-count").textContent = faq.canList
    ? (shown.length === entries.length ? plural(entries.length, "entry", "entries")
      : `${shown.length} of ${entries.length}`)
    : (kb ? plural(kb.faq, "entry", "entries") : "");
}

/** Reload what is shown: every entry (list endpoint), or the last search again. */
async function reload() {
  const kb = picker.current();
  generation += 1;
  const mine = generation;
  say($("faq-error"), "");
  if (!kb) {
    entries = [];
    render();
    return;
  }
  $("faq-title").textContent = `FAQ entries of ${kb.name}`;
  if (!faq.canList && !lastQuery) {
    entries = [];
    render();
    return;
  }
  list.setAttribute("aria-busy", "true");
  try {
    const found = faq.canList ? await faq.list(kb.id) : await FaqApi.search(kb.id, lastQuery);
    if (mine !== generation) return;
    entries = found;
  } catch (failure) {
    if (mine !== generation) return;
    entries = [];
    say($("faq-error"), `${faq.canList ? "Could not list" : "Search failed"}: `
      + describe(failure));
  } finally {
    if (mine === generation) list.removeAttribute("aria-busy");
  }
  render();
}

function search(event) {
  event.preventDefault();
  if (faq.canList) {
    render();
    return;
  }
  const query = $("faq-search").value.trim();
  if (!query) {
    say($("faq-error"), "Type something to search for.");
    $("faq-search").focus();
    return;
  }
  lastQuery = query;
  reload();
}

async function edit(entry) {
  const kb = picker.current();
  if (!kb) return;
  const question = h("textarea", { id: "faq-edit-question", rows: 2, required: true });
  const answer = h("textarea", { id: "faq-edit-answer", rows: 5, required: true });
  const source = h("input", { id: "faq-edit-source", autocomplete: "off" });
  question.value = entry.question;
  answer.value = entry.answer;
  source.value = entry.source || "";
  const updated = await openDialog({
    name: "faq-edit",
    title: "Edit the FAQ entry",
    fields: [
      h("label", { for: "faq-edit-question" }, "Question", question),
      h("label", { for: "faq-edit-answer" }, "Answer", answer),
      h("label", { for: "faq-edit-source" }, "Source (optional)", source),
    ],
    submitLabel: "Save",
    ready: () => Boolean(question.value.trim() && answer.value.trim()),
    submit: async () => (await faq.update(kb.id, entry.id, {
      question: question.value.trim(), answer: answer.value.trim(),
      source: source.value.trim() || null,
    })) || true,
  });
  if (!updated) return;
  announce("Entry saved.");
  await reload();
  $("faq-title").focus();
}

async function remove(entry) {
  const kb = picker.current();
  if (!kb || !window.confirm(`Delete the FAQ entry “${entry.question}”?`)) return;
  say($("faq-error"), "");
  try {
    await faq.remove(kb.id, entry.id);
  } catch (failure) {
    if (failure.status !== 404) {
      say($("faq-error"), `Not deleted: ${describe(failure)}`);
      return;
    }
  }
  announce("Entry deleted.");
  await picker.load();
  await reload();
  $("faq-title").focus();
}

async function importFile(event) {
  event.preventDefault();
  const kb = picker.current();
  const input = $("import-file");
  const error = $("import-error");
  if (!kb) return say(error, "Choose a knowledge base first.");
  if (!input.files.length) return say(error, "Choose a .jsonl or .csv file.");
  say(error, "");
  const file = input.files[0];
  const button = $("import-button");
  button.disabled = true;
  try {
    const out = await FaqApi.importFile(kb.id, file);
    input.value = "";
    $("import-result").textContent = `${file.name}: ${plural(out.rows, "row")}, `
      + `${out.added} added, ${out.duplicates} already held or repeated.`;
    await picker.load();
    await reload();
  } catch (failure) {
    $("import-result").textContent = "";
    say(error, `Not imported: ${describe(failure)}`);
  } finally {
    button.disabled = false;
  }
}

function describeCapabilities() {
  say($("faq-mode"), faq.canList ? "Typing filters the entries below."
    : "This server cannot list FAQ entries: a search shows the 50 entries closest to it "
      + "(the FAQ search of the retrieval explain).");
  const missing = [!faq.canUpdate && "edit", !faq.canDelete && "delete"].filter(Boolean);
  say($("faq-capabilities"), missing.length ? `This server has no endpoint to ${missing
    .join(" or ")} FAQ entries, so only importing and searching are offered.` : "");
  $("faq-search-button").textContent = faq.canList ? "Filter" : "Search";
}

async function showKb() {
  keepKbInLinks(picker.current());
  lastQuery = faq.canList ? lastQuery : "";
  if (!faq.canList) $("faq-search").value = "";
  await reload();
}

initKeyControl($("key-control"), { onKeyEntered: () => picker.load().then(showKb) });
$("import-form").addEventListener("submit", importFile);
$("faq-search-form").addEventListener("submit", search);
$("faq-search").addEventListener("input", () => {
  if (faq.canList) render();
});
$("faq-refresh").addEventListener("click", async () => {
  await picker.load();
  await reload();
});

(async () => {
  faq = await FaqApi.discover();
  describeCapabilities();
  await picker.load();
  await showKb();
  document.body.setAttribute("data-ready", "true");
})();
