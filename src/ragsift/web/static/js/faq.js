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
import { timeNode } from "./format.js";
import { t, translatePage } from "./i18n.js";
import { KbPicker, keepKbInLinks } from "./kbs.js";
import "./strings/common.js";
import { countKey } from "./strings/documents.js";

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
      "aria-label": t("documents.faq.editLabel", { title }), onclick: () => edit(entry) },
    t("documents.faq.edit")));
  }
  if (faq.canDelete) {
    actions.push(h("button", { type: "button", class: "danger", dataset: { action: "delete" },
      "aria-label": t("documents.faq.deleteLabel", { title }), onclick: () => remove(entry) },
    t("documents.faq.delete")));
  }
  const roles = entry.allowed_roles && entry.allowed_roles.length
    ? t("documents.faq.roles", { roles: entry.allowed_roles.join(t("documents.list.separator")) })
    : null;
  const separator = t("documents.faq.factSeparator");
  const facts = [
    entry.source ? t("documents.faq.source", { source: entry.source })
      : t("documents.faq.noSource"),
    entry.tenant_id ? t("documents.faq.tenant", { tenant: entry.tenant_id }) : null,
    entry.dataset_id ? t("documents.faq.dataset", { dataset: entry.dataset_id }) : null,
    entry.visibility ? t("documents.faq.visibility", { visibility: entry.visibility }) : null,
    roles,
    entry.rank ? t("documents.faq.rank", { rank: entry.rank }) : null,
    entry.direct_answer ? t("documents.faq.direct") : null,
  ].filter(Boolean).join(separator);
  // "added {time}": the sentence split around the <time> node, so its order follows the language
  const [beforeTime, afterTime = ""] = t("documents.faq.added", { time: "\u0000" })
    .split("\u0000");
  return h("li", { class: "faq-entry", dataset: { faqId: entry.id } },
    h("h3", { class: "faq-question", dataset: { part: "question" } }, title),
    h("p", { class: "faq-answer", dataset: { part: "answer" } }, entry.answer),
    h("p", { class: "small muted", dataset: { part: "facts" } }, facts,
      entry.created_at ? [separator, beforeTime, timeNode(entry.created_at), afterTime] : null),
    actions.length ? h("div", { class: "actions" }, actions) : null);
}

function render() {
  const kb = picker.current();
  const wanted = faq.canList ? $("faq-search").value.trim().toLowerCase() : "";
  const shown = entries.filter((entry) => matches(entry, wanted));
  list.replaceChildren(...shown.map(entryItem));
  const empty = $("faq-empty");
  if (!kb) say(empty, t("documents.faq.chooseKb"));
  else if (shown.length) say(empty, "");
  else if (faq.canList) {
    say(empty, t(entries.length ? "documents.faq.noMatch" : "documents.faq.none"));
  } else {
    say(empty, t(lastQuery ? "documents.faq.noneFound"
      : (kb.faq ? "documents.faq.typeSearch" : "documents.faq.none")));
  }
  const entryCount = (count) => t(countKey("documents.faq.count", count), { count });
  $("faq-count").textContent = faq.canList
    ? (shown.length === entries.length ? entryCount(entries.length)
      : t("documents.faq.count.filtered", { shown: shown.length, total: entries.length }))
    : (kb ? entryCount(kb.faq) : "");
  renderTitle();
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
    say($("faq-error"), t(faq.canList ? "documents.faq.listFailed" : "documents.faq.searchFailed",
      { reason: describe(failure) }));
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
    say($("faq-error"), t("documents.faq.searchEmpty"));
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
    title: t("documents.faq.editTitle"),
    fields: [
      h("label", { for: "faq-edit-question" }, t("documents.faq.question"), question),
      h("label", { for: "faq-edit-answer" }, t("documents.faq.answer"), answer),
      h("label", { for: "faq-edit-source" }, t("documents.faq.sourceField"), source),
    ],
    submitLabel: t("documents.faq.save"),
    ready: () => Boolean(question.value.trim() && answer.value.trim()),
    submit: async () => (await faq.update(kb.id, entry.id, {
      question: question.value.trim(), answer: answer.value.trim(),
      source: source.value.trim() || null,
    })) || true,
  });
  if (!updated) return;
  announce(t("documents.faq.saved"));
  await reload();
  $("faq-title").focus();
}

async function remove(entry) {
  const kb = picker.current();
  if (!kb || !window.confirm(t("documents.faq.deleteConfirm", { question: entry.question }))) {
    return;
  }
  say($("faq-error"), "");
  try {
    await faq.remove(kb.id, entry.id);
  } catch (failure) {
    if (failure.status !== 404) {
      say($("faq-error"), t("documents.faq.deleteFailed", { reason: describe(failure) }));
      return;
    }
  }
  announce(t("documents.faq.deleted"));
  await picker.load();
  await reload();
  $("faq-title").focus();
}

async function importFile(event) {
  event.preventDefault();
  const kb = picker.current();
  const input = $("import-file");
  const error = $("import-error");
  if (!kb) return say(error, t("documents.faq.importNoKb"));
  if (!input.files.length) return say(error, t("documents.faq.importNoFile"));
  say(error, "");
  const file = input.files[0];
  const button = $("import-button");
  button.disabled = true;
  try {
    const out = await FaqApi.importFile(kb.id, file);
    input.value = "";
    $("import-result").textContent = t(countKey("documents.faq.imported", out.rows),
      { file: file.name, count: out.rows, added: out.added, duplicates: out.duplicates });
    await picker.load();
    await reload();
  } catch (failure) {
    $("import-result").textContent = "";
    say(error, t("documents.faq.importFailed", { reason: describe(failure) }));
  } finally {
    button.disabled = false;
  }
}

function describeCapabilities() {
  say($("faq-mode"), t(faq.canList ? "documents.faq.modeList" : "documents.faq.modeSearch"));
  const missing = !faq.canUpdate && !faq.canDelete ? "documents.faq.noEditDelete"
    : !faq.canUpdate ? "documents.faq.noEdit" : !faq.canDelete ? "documents.faq.noDelete" : "";
  say($("faq-capabilities"), missing ? t(missing) : "");
  $("faq-search-button").textContent = t(faq.canList ? "documents.faq.filterButton"
    : "documents.faq.searchButton");
}

function renderTitle() {
  const kb = picker.current();
  $("faq-title").textContent = kb ? t("documents.faq.titleOf", { kb: kb.name })
    : t("documents.faq.title");
}

/** Another language: the static texts are translated by setLanguage; what this page built is
 * built again (the focus, when on an entry's action, kept there). */
function relabel() {
  const focused = document.activeElement;
  const entryId = focused && focused.closest ? focused.closest("li.faq-entry")?.dataset.faqId
    : null;
  const action = focused && focused.dataset ? focused.dataset.action : null;
  describeCapabilities();
  picker.render();
  render();
  if (entryId && action) {
    const again = list.querySelector(`li[data-faq-id="${CSS.escape(entryId)}"] `
      + `[data-action="${action}"]`);
    if (again) again.focus();
  }
}

translatePage();
document.addEventListener("ragsift:language", relabel);

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
