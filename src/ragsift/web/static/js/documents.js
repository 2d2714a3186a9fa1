// The documents page: per knowledge base every document with its status (and the server's
// reason when it FAILED or a replacement failed), chunk count, size, update time and key;
// delete, reindex, replace the file, open the chunks; upload; create and delete KBs. The chunk
// counts are asked for lazily (chunkcounts.js).
import { api, describe } from "./api.js";
import { initKeyControl } from "./auth.js";
import { ChunkCounts } from "./chunkcounts.js";
import { ChunkViewer } from "./chunks.js";
import { openDialog } from "./dialog.js";
import { h, say } from "./dom.js";
import { bytes, timeNode } from "./format.js";
import { t, translatePage } from "./i18n.js";
import { confirmDeleteKb, createKb, KbPicker, keepKbInLinks } from "./kbs.js";
import { editMetadata, metadataLine, metadataText } from "./metadialog.js";
import "./strings/common.js";
import { countKey } from "./strings/documents.js";
import { statusLabel, Uploader } from "./upload.js";

const $ = (id) => document.getElementById(id);
const POLL_MS = 700;
const SETTLED = new Set(["READY", "FAILED", "RETIRED"]);
const ACTIONABLE = new Set(["READY", "FAILED"]); // what the server reindexes or replaces

const body = $("documents-body");
const documents = new Map(); // id -> document, in the server's order (oldest first)
const rows = new Map(); // id -> <tr>
let generation = 0; // bumped per KB load: late answers for another KB are dropped

const picker = new KbPicker({
  select: $("kb"), empty: $("kb-empty"), error: $("kb-error"),
  onChange: () => showKb(),
});
const viewer = new ChunkViewer({
  panel: $("chunks-panel"), title: $("chunks-title"), summary: $("chunks-summary"),
  error: $("chunks-error"), list: $("chunks-list"), prev: $("chunks-prev"),
  next: $("chunks-next"), range: $("chunks-range"), close: $("chunks-close"),
  onTotal: (id, total) => {
    const doc = documents.get(id);
    if (doc) counts.set(doc, total);
  },
});
const counts = new ChunkCounts({ documentOf: (id) => documents.get(id), onCount: updateCount });

const settled = (doc) => SETTLED.has(doc.status) && !doc.replacing;
const docUrl = (id) => `/api/documents/${encodeURIComponent(id)}`;

function announce(message) {
  say($("documents-notice"), message);
}

function updateCount(id) {
  const row = rows.get(id);
  const doc = documents.get(id);
  if (!row || !doc) return;
  row.querySelector('td[data-col="chunks"] .cell').replaceChildren(counts.cell(doc));
}

// ---------- the table ----------

function actionButton(action, text, label, disabled, onclick) {
  return h("button", { type: "button", class: action === "delete" ? "danger" : "secondary",
    dataset: { action }, "aria-label": label, disabled, onclick }, text);
}

function statusCell(doc) {
  const failedReplacement = doc.status !== "FAILED" && doc.error;
  return [
    h("span", { class: `badge status-${doc.status}`, dataset: { part: "status" } },
      statusLabel(doc.status)),
    doc.replacing ? h("span", { class: "badge status-replacing", dataset: { part: "replacing" } },
      t("documents.status.replacing")) : null,
    doc.error ? h("p", { class: `reason ${failedReplacement ? "warn" : "bad"}`,
      dataset: { part: "reason" } }, doc.error) : null,
    doc.status === "RETIRED" ? h("p", { class: "reason small muted" },
      t("documents.status.retired")) : null,
  ];
}

function renderRow(doc) {
  const name = doc.filename;
  const busy = !ACTIONABLE.has(doc.status) || doc.replacing;
  const gone = doc.status === "DELETING" || doc.status === "RETIRED";
  const cell = (col, label, content, extra = {}) =>
    h("td", { dataset: { col, label }, ...extra }, h("div", { class: "cell" }, content));
  const row = h("tr", { dataset: { documentId: doc.id, filename: name, status: doc.status,
    replacing: doc.replacing ? "true" : "false" } },
  cell("file", t("documents.col.file"), [h("span", { class: "filename" }, name),
    metadataLine(doc)]),
  cell("status", t("documents.col.status"), statusCell(doc)),
  cell("chunks", t("documents.col.chunks"), counts.cell(doc), { class: "num" }),
  cell("size", t("documents.col.size"), bytes(doc.size), { class: "num", title: `${doc.size} B` }),
  cell("updated", t("documents.col.updated"), timeNode(doc.updated_at || doc.created_at)),
  cell("key", t("documents.col.key"), doc.key ? h("span", { class: "mono" }, doc.key) : "–"),
  cell("actions", t("documents.col.actions"), h("div", { class: "actions" },
    actionButton("chunks", t("documents.action.chunks"),
      t("documents.action.chunksLabel", { name }), doc.status !== "READY",
      (event) => viewer.open(documents.get(doc.id) || doc, event.currentTarget)),
    actionButton("reindex", t("documents.action.reindex"),
      t("documents.action.reindexLabel", { name }), busy, () => reindex(doc.id)),
    actionButton("replace", t("documents.action.replace"),
      t("documents.action.replaceLabel", { name }), busy, () => replace(doc.id)),
    actionButton("metadata", t("documents.action.metadata"),
      t("documents.action.metadataLabel", { name }), gone, () => metadata(doc.id)),
    actionButton("delete", t("documents.action.delete"),
      t("documents.action.deleteLabel", { name }), gone, () => remove(doc.id)))));
  return row;
}

/** Put `doc` in the table (a new row, or its row redrawn, keeping the focus on the action). */
function setRow(doc, { filter = true } = {}) {
  documents.set(doc.id, doc);
  const old = rows.get(doc.id);
  const row = renderRow(doc);
  rows.set(doc.id, row);
  if (old) {
    const focused = old.contains(document.activeElement)
      ? document.activeElement.dataset.action : null;
    counts.unwatch(old);
    old.replaceWith(row);
    if (focused) {
      const again = row.querySelector(`[data-action="${focused}"]`);
      (again && !again.disabled ? again : $("documents-title")).focus();
    }
  } else {
    body.append(row);
  }
  counts.watch(row, doc);
  if (filter) applyFilter();
  if (!settled(doc)) poll();
}

function dropRow(id) {
  const row = rows.get(id);
  const hadFocus = row && row.contains(document.activeElement);
  if (row) row.remove();
  rows.delete(id);
  documents.delete(id);
  counts.forget(id);
  viewer.forget(id);
  if (hadFocus) $("documents-title").focus();
  applyFilter();
}

function applyFilter() {
  const wanted = $("documents-filter").value.trim().toLowerCase();
  let shown = 0;
  for (const [id, row] of rows) {
    const doc = documents.get(id);
    const text = `${doc.filename} ${doc.key || ""} ${doc.status} ${statusLabel(doc.status)} ${
      metadataText(doc)}`.toLowerCase();
    row.hidden = Boolean(wanted) && !text.includes(wanted);
    if (!row.hidden) shown += 1;
  }
  const total = rows.size;
  $("documents-count").textContent = shown === total
    ? t(countKey("documents.count", total), { count: total })
    : t("documents.count.filtered", { shown, total });
  const listFailed = $("documents-error").dataset.failed === "list";
  $("documents-empty").hidden = total > 0 || !picker.current() || listFailed;
}

async function loadDocuments() {
  const kb = picker.current();
  generation += 1;
  const mine = generation;
  counts.reset();
  rows.clear();
  documents.clear();
  body.replaceChildren();
  sayError("");
  renderTitle();
  if (!kb) {
    applyFilter();
    return;
  }
  const table = $("documents-table");
  table.setAttribute("aria-busy", "true");
  try {
    const list = await api(`/api/kbs/${encodeURIComponent(kb.id)}/documents`);
    if (mine !== generation) return;
    for (const doc of list) setRow(doc, { filter: false });
  } catch (failure) {
    if (mine === generation) {
      sayError(t("documents.error.list", { reason: describe(failure) }), "list");
    }
  } finally {
    if (mine === generation) table.removeAttribute("aria-busy");
    applyFilter();
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let pollingFor = null; // the generation whose documents are being polled

/** A changed document: redraw its row, and say so when it has just settled. */
function changed(before, doc) {
  if (JSON.stringify(before) === JSON.stringify(doc)) return false;
  setRow(doc);
  if (!settled(before) && settled(doc)) settledMessage(before, doc);
  return true;
}

/**
 * Poll while documents are not settled (being ingested, reindexed, replaced or deleted): a
 * few by GET /api/documents/{id}, more by listing the KB once per round (one request).
 */
async function poll() {
  if (pollingFor === generation) return;
  const mine = generation;
  pollingFor = mine;
  const kb = picker.current();
  try {
    for (;;) {
      const waiting = [...documents.values()].filter((doc) => !settled(doc));
      if (!waiting.length || !kb) return;
      await sleep(POLL_MS);
      if (mine !== generation) return;
      let settledSome = false;
      try {
        // one being deleted is followed through the list: its own GET would end in a 404
        if (waiting.length <= 4 && waiting.every((doc) => doc.status !== "DELETING")) {
          for (const before of waiting) {
            let doc = null;
            try {
              doc = await api(docUrl(before.id));
            } catch (failure) {
              if (failure.status !== 404) throw failure;
            }
            if (mine !== generation) return;
            if (!documents.has(before.id)) continue;
            if (doc === null) {
              dropRow(before.id);
              announce(t("documents.notice.deleted", { name: before.filename }));
              settledSome = true;
            } else {
              settledSome = changed(documents.get(before.id), doc) && settled(doc)
                || settledSome;
            }
          }
        } else {
          const list = await api(`/api/kbs/${encodeURIComponent(kb.id)}/documents`);
          if (mine !== generation) return;
          const listed = new Set(list.map((doc) => doc.id));
          for (const id of [...documents.keys()]) if (!listed.has(id)) dropRow(id);
          for (const doc of list) {
            const before = documents.get(doc.id);
            if (!before) setRow(doc);
            else settledSome = changed(before, doc) && settled(doc) || settledSome;
          }
        }
      } catch (failure) {
        if (mine !== generation) return;
        announce(t("documents.notice.statusUnknown", { reason: describe(failure) }));
        await sleep(POLL_MS * 3);
      }
      if (settledSome) picker.load(); // the KB list's READY counts
    }
  } finally {
    if (pollingFor === mine) pollingFor = null;
  }
}

function settledMessage(before, doc) {
  const name = doc.filename;
  if (before.replacing) {
    announce(doc.error ? t("documents.notice.replaceFailed", { name, reason: doc.error })
      : t("documents.notice.replaced", { name }));
  } else if (doc.status === "FAILED") {
    announce(t("documents.notice.failed",
      { name, reason: doc.error || t("documents.notice.noReason") }));
  } else {
    announce(t("documents.notice.status", { name, status: statusLabel(doc.status) }));
  }
}

// ---------- actions ----------

async function reindex(id) {
  const doc = documents.get(id);
  if (!doc) return;
  sayError("");
  try {
    const accepted = await api(`${docUrl(id)}/reindex`, { method: "POST" });
    announce(t("documents.notice.reindexing", { name: doc.filename }));
    setRow(accepted);
  } catch (failure) {
    sayError(t("documents.error.reindex", { reason: describe(failure) }));
  }
}

async function replace(id) {
  const doc = documents.get(id);
  if (!doc) return;
  const input = h("input", { id: "replace-file", type: "file", accept: $("upload-files").accept,
    required: true });
  const accepted = await openDialog({
    name: "replace",
    title: t("documents.replace.title", { name: doc.filename }),
    description: t("documents.replace.description"),
    fields: [h("label", { for: "replace-file" }, t("documents.replace.file"), input)],
    submitLabel: t("documents.replace.submit"),
    ready: () => input.files.length === 1,
    submit: async () => {
      const form = new FormData();
      form.append("file", input.files[0], input.files[0].name);
      return api(`${docUrl(id)}/content`, { method: "PUT", body: form });
    },
  });
  if (!accepted) {
    refocus(id, "replace");
    return;
  }
  announce(accepted.replacing
    ? t("documents.notice.replacing", { name: doc.filename, file: accepted.filename })
    : t("documents.notice.sameFile", { name: doc.filename }));
  if (documents.has(id)) setRow(accepted);
  refocus(id, "replace");
}

/** Edit a document's metadata (issue 36): saved at once, nothing re-embedded. */
async function metadata(id) {
  const doc = documents.get(id);
  if (!doc) return;
  const saved = await editMetadata(doc, docUrl(id));
  if (saved) {
    announce(t("documents.notice.metadata", { name: doc.filename }));
    if (documents.has(id)) setRow({ ...documents.get(id), metadata: saved.metadata });
  }
  refocus(id, "metadata");
}

/** After a dialog whose opener was redrawn meanwhile: the focus back on that action of the
 * row (or the row's first enabled action, or the table's title). */
function refocus(id, action) {
  const active = document.activeElement;
  if (active && active !== document.body && active.isConnected) return;
  const row = rows.get(id);
  const buttons = row ? [...row.querySelectorAll("button[data-action]")] : [];
  const target = buttons.find((b) => b.dataset.action === action && !b.disabled)
    || buttons.find((b) => !b.disabled) || $("documents-title");
  target.focus();
}

async function remove(id) {
  const doc = documents.get(id);
  if (!doc) return;
  if (!window.confirm(t("documents.delete.confirm", { name: doc.filename }))) {
    refocus(id, "delete");
    return;
  }
  sayError("");
  try {
    await api(docUrl(id), { method: "DELETE" });
  } catch (failure) {
    if (failure.status !== 404) {
      sayError(t("documents.error.delete", { reason: describe(failure) }));
      return;
    }
  }
  // a KB keeping older versions keeps it RETIRED; asked through the KB's list, since a GET
  // of the deleted document itself would be a 404 (an error in the browser's console)
  let after = null;
  try {
    const query = doc.key ? `?key=${encodeURIComponent(doc.key)}` : "";
    const list = await api(`/api/kbs/${encodeURIComponent(doc.kb_id)}/documents${query}`);
    after = list.find((listed) => listed.id === id) || null;
  } catch {
    // unknown: the row goes, the next refresh shows what is left
  }
  if (after && documents.has(id)) setRow(after);
  else dropRow(id);
  announce(t("documents.notice.deleted", { name: doc.filename }));
  picker.load();
}

const uploader = new Uploader({
  form: $("upload-form"), input: $("upload-files"), button: $("upload-button"),
  error: $("upload-error"), list: $("upload-status"), notice: $("upload-notice"),
  drop: $("upload-drop"), clear: $("upload-clear"), kbId: () => picker.current()?.id,
  // the table's own polling follows the document from here
  onAccepted: async (accepted) => {
    const kbId = picker.current()?.id;
    const doc = await api(docUrl(accepted.id)).catch(() => null);
    if (doc && doc.kb_id === kbId) setRow(doc);
  },
});

// ---------- knowledge bases ----------

async function showKb() {
  keepKbInLinks(picker.current());
  $("kb-delete").disabled = !picker.current();
  viewer.close();
  await loadDocuments();
}

async function newKb(event) {
  event.preventDefault();
  const error = $("kb-error");
  const name = $("kb-name").value.trim();
  if (!name) {
    say(error, t("documents.kb.nameMissing"));
    $("kb-name").focus();
    return;
  }
  try {
    const kb = await createKb(name);
    say(error, "");
    $("kb-name").value = "";
    await picker.load(kb.id);
    announce(t("documents.notice.kbCreated", { name: kb.name }));
    await showKb();
  } catch (failure) {
    say(error, t("documents.error.create", { reason: describe(failure) }));
  }
}

async function deleteKb() {
  const kb = picker.current();
  if (!kb) return;
  say($("kb-error"), "");
  if (!(await confirmDeleteKb(kb))) return;
  picker.select.value = "";
  await picker.load();
  announce(t("documents.notice.kbDeleted", { name: kb.name }));
  await showKb();
  $("kb").focus();
}

/** The error line; `failed` marks what failed ("list": the table could not be read). */
function sayError(message, failed = "") {
  const node = $("documents-error");
  say(node, message);
  if (failed) node.dataset.failed = failed;
  else delete node.dataset.failed;
}

function renderTitle() {
  const kb = picker.current();
  $("documents-title").textContent = kb ? t("documents.list.titleOf", { kb: kb.name })
    : t("documents.list.title");
}

/** Another language: the static texts, then what this page built, again (the focus kept on
 * the row's action that had it). Messages already said stay in the language they were said. */
function relabel() {
  renderTitle();
  picker.render();
  for (const doc of [...documents.values()]) setRow(doc, { filter: false });
  applyFilter();
  viewer.relabel();
  uploader.relabel();
}

translatePage();
document.addEventListener("ragsift:language", relabel);
initKeyControl($("key-control"), { onKeyEntered: () => picker.load().then(showKb) });
$("kb-form").addEventListener("submit", newKb);
$("kb-delete").addEventListener("click", deleteKb);
$("documents-filter").addEventListener("input", applyFilter);
$("documents-refresh").addEventListener("click", () => picker.load().then(showKb));
picker.load().then(showKb).then(() => document.body.setAttribute("data-ready", "true"));
