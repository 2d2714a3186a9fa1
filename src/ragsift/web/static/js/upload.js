// Uploads of the documents and debug pages: files picked, or files and folders dropped on the
// drop zone, sent one request per file (XHR: its upload events give the bytes sent), then each
// document's status polled with backoff until READY or FAILED (with the server's reason).
//
// The tracked uploads are kept in sessionStorage (this tab), so a reload shows them again and
// polls those still being ingested; a file whose bytes were still being sent is shown as
// interrupted (a browser cannot resume it).
import { api, ApiError, describe, errorFrom } from "./api.js";
import { storedKey } from "./auth.js";
import { h, say } from "./dom.js";
import { formatNumber, formatPercent } from "./format.js";
import { t } from "./i18n.js";
import { countKey } from "./strings/documents.js";

const SETTLED = new Set(["READY", "FAILED"]);
const STORAGE_KEY = "ragsift.uploads";
const POLL_FIRST_MS = 400;
const POLL_MAX_MS = 5000;
const KEPT = 200; // tracked uploads remembered per tab (the oldest settled ones go first)

/** READY, 就绪, …: the status in the page's language (the code itself when unknown). */
export function statusLabel(status) {
  const key = `documents.status.${status}`;
  const label = t(key);
  return label === key ? status : label;
}

/** The extensions an <input accept=".a,.b"> takes, lower-cased (empty: any). */
export function acceptedExtensions(accept) {
  return String(accept || "").split(",").map((s) => s.trim().toLowerCase()).filter(Boolean);
}

export function isAccepted(name, extensions) {
  if (!extensions.length) return true;
  const dot = name.lastIndexOf(".");
  return dot > 0 && extensions.includes(name.slice(dot).toLowerCase());
}

function readEntries(reader) {
  return new Promise((resolve, reject) => reader.readEntries(resolve, reject));
}

/** Every file under FileSystemEntry objects (a dropped folder is walked; readEntries answers
 * in batches, so it is asked until it returns none). */
export async function filesFromEntries(entries) {
  const found = []; // {file, inFolder}
  const walk = async (entry, inFolder) => {
    if (entry.isFile) {
      const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
      found.push({ file, inFolder });
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      for (let batch = await readEntries(reader); batch.length; batch = await readEntries(reader)) {
        for (const child of batch) await walk(child, true);
      }
    }
  };
  for (const entry of entries) await walk(entry, false);
  return found;
}

/** The files of a drop ({file, inFolder}): folders through webkitGetAsEntry, else the files
 * themselves (read before any await: a DataTransfer is emptied once its event is over). */
function droppedFiles(transfer) {
  const items = [...(transfer.items || [])].filter((item) => item.kind === "file");
  const entries = items.map((item) => (item.webkitGetAsEntry ? item.webkitGetAsEntry() : null));
  if (items.length && entries.every(Boolean)) return filesFromEntries(entries);
  return Promise.resolve([...(transfer.files || [])].map((file) => ({ file, inFolder: false })));
}

/** What a drop sends: every loose file (the server says why one it cannot read is refused)
 * and the files of folders that a parser reads; `skipped` counts the others. */
export function chooseDropped(found, extensions) {
  const files = found.filter(({ file, inFolder }) => !inFolder || isAccepted(file.name, extensions))
    .map(({ file }) => file);
  return { files, skipped: found.length - files.length };
}

/** POST one file with XHR: onProgress(sent, total) while its bytes go; the server's answer. */
function sendFile(url, file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    xhr.setRequestHeader("accept", "application/json");
    const key = storedKey();
    if (key) xhr.setRequestHeader("authorization", `Bearer ${key}`);
    xhr.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    });
    xhr.addEventListener("error", () => reject(new ApiError(0, "network_error", "")));
    xhr.addEventListener("load", () => {
      const response = new Response(xhr.responseText || null, { status: xhr.status,
        headers: { "content-type": "application/json",
          "retry-after": xhr.getResponseHeader("retry-after") || "" } });
      if (xhr.status >= 200 && xhr.status < 300) resolve(response.json());
      else resolve(errorFrom(response).then((error) => Promise.reject(error)));
    });
    const form = new FormData();
    form.append("files", file, file.name);
    xhr.send(form);
  });
}

function load() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "[]");
    return Array.isArray(stored) ? stored : [];
  } catch {
    return [];
  }
}

/** One line per uploaded file with its progress; onAccepted(doc) when the server took a file,
 * onSettled(doc) once per document that ends READY or FAILED. */
export class Uploader {
  constructor({ form, input, button, error, list, kbId, onSettled = () => {},
    onAccepted = () => {}, notice = null, drop = null, clear = null }) {
    this.input = input;
    this.button = button;
    this.error = error;
    this.list = list;
    this.kbId = kbId;
    this.onSettled = onSettled;
    this.onAccepted = onAccepted;
    this.notice = notice;
    this.clear = clear;
    this.entries = load();
    this.lines = new Map(); // entry.local -> {line, ...parts}
    this.polling = false;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.upload([...this.input.files]).then(() => { this.input.value = ""; });
    });
    if (drop) this.dropZone(drop);
    if (clear) clear.addEventListener("click", () => this.clearFinished());
    for (const entry of this.entries) {
      if (entry.status === "SENDING") {
        entry.status = "FAILED";
        entry.error = t("documents.upload.interrupted");
      }
      this.render(entry);
    }
    this.save();
    this.poll();
  }

  dropZone(zone) {
    const over = (event) => {
      event.preventDefault();
      zone.classList.add("drag-over");
    };
    zone.addEventListener("dragenter", over);
    zone.addEventListener("dragover", over);
    zone.addEventListener("dragleave", () => zone.classList.remove("drag-over"));
    zone.addEventListener("drop", async (event) => {
      event.preventDefault();
      zone.classList.remove("drag-over");
      const found = await droppedFiles(event.dataTransfer);
      const { files, skipped } = chooseDropped(found, acceptedExtensions(this.input.accept));
      await this.upload(files, skipped);
    });
  }

  /** Forget the settled uploads (their lines go; the documents stay). */
  clearFinished() {
    for (const entry of this.entries.filter((e) => SETTLED.has(e.status))) {
      this.lines.get(entry.local)?.line.remove();
      this.lines.delete(entry.local);
    }
    this.entries = this.entries.filter((entry) => !SETTLED.has(entry.status));
    this.save();
    this.button.focus();
  }

  save() {
    if (this.clear) this.clear.hidden = !this.entries.some((e) => SETTLED.has(e.status));
    const settled = this.entries.filter((entry) => SETTLED.has(entry.status));
    const drop = new Set(settled.slice(0, Math.max(0, this.entries.length - KEPT)));
    this.entries = this.entries.filter((entry) => !drop.has(entry));
    try {
      // nothing tracked leaves nothing behind in the tab's storage
      if (this.entries.length) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(this.entries));
      else sessionStorage.removeItem(STORAGE_KEY);
    } catch {
      // storage full or off: the uploads go on, only a reload forgets them
    }
  }

  async upload(files, skipped = 0) {
    const kbId = this.kbId();
    if (!kbId) return say(this.error, t("documents.upload.noKb"));
    if (!files.length) {
      return say(this.error, skipped ? t("documents.upload.noneAccepted", { skipped })
        : t("documents.upload.noFiles"));
    }
    say(this.error, skipped ? t("documents.upload.skipped", { skipped }) : "");
    this.button.disabled = true;
    const accepted = [];
    const held = [];
    try {
      for (const file of files) {
        const entry = { local: `${Date.now()}-${Math.random()}`, kbId, name: file.name,
          size: file.size, sent: 0, status: "SENDING", id: null, error: null };
        this.entries.push(entry);
        this.render(entry);
        this.save();
        try {
          const url = `/api/kbs/${encodeURIComponent(kbId)}/documents`;
          const out = await sendFile(url, file, (sent) => this.update(entry, { sent }))
            .catch((failure) => {
              if (failure.status !== 401) throw failure;
              // no key yet (or a refused one): api() asks for one and sends the file again
              const form = new FormData();
              form.append("files", file, file.name);
              return api(url, { method: "POST", body: form });
            });
          const doc = out.documents[0];
          accepted.push(doc);
          if (doc.duplicate) held.push(doc.filename);
          this.update(entry, { id: doc.id, status: doc.status, error: doc.error,
            sent: file.size, name: doc.filename, duplicate: doc.duplicate });
          this.onAccepted(doc);
        } catch (failure) {
          this.update(entry, { status: "FAILED", error: describe(failure) });
        }
      }
    } finally {
      this.button.disabled = false;
    }
    if (this.notice && accepted.length) {
      const count = accepted.length;
      say(this.notice, held.length
        ? t(countKey("documents.upload.acceptedHeld", count),
          { count, held: held.join(t("documents.list.separator")) })
        : t(countKey("documents.upload.accepted", count), { count }));
    }
    this.poll();
    return accepted;
  }

  update(entry, changes) {
    Object.assign(entry, changes);
    this.render(entry);
    if (!("sent" in changes && Object.keys(changes).length === 1)) this.save();
  }

  /** Draw (or redraw) an entry's line: name, bytes or status, the reason when it failed. */
  render(entry) {
    let parts = this.lines.get(entry.local);
    if (!parts) {
      const name = h("span", { class: "upload-name" });
      const status = h("span", { class: "badge" });
      const bar = h("progress", { max: 100, value: 0 });
      const detail = h("span", { class: "small muted upload-detail" });
      const reason = h("span", { class: "reason", hidden: true });
      const line = h("li", {}, name, status, bar, detail, reason);
      parts = { line, name, status, bar, detail, reason };
      this.lines.set(entry.local, parts);
      this.list.prepend(line);
    }
    const { line, name, status, bar, detail, reason } = parts;
    line.dataset.filename = entry.name;
    line.dataset.status = entry.status;
    if (entry.id) line.dataset.documentId = entry.id;
    name.textContent = entry.name;
    status.className = `badge status-${entry.status}`;
    status.textContent = entry.status === "SENDING" ? t("documents.upload.sending")
      : statusLabel(entry.status);
    const fraction = entry.size ? Math.min(1, entry.sent / entry.size) : 1;
    bar.hidden = entry.status !== "SENDING";
    bar.value = Math.round(fraction * 100);
    bar.setAttribute("aria-label", t("documents.upload.progressLabel", { name: entry.name }));
    detail.textContent = entry.status === "SENDING"
      ? t("documents.upload.bytes", { percent: formatPercent(fraction),
        sent: formatNumber(entry.sent), size: formatNumber(entry.size) })
      : (entry.duplicate ? t("documents.upload.held") : "");
    say(reason, entry.status === "FAILED" ? entry.error || t("documents.upload.failed") : "");
  }

  /** Poll the documents not yet settled, one round at a time: quickly at first, then more
   * slowly while nothing changes (at most every POLL_MAX_MS). */
  async poll() {
    if (this.polling) return;
    this.polling = true;
    let wait = POLL_FIRST_MS;
    try {
      for (;;) {
        const waiting = this.entries.filter((entry) => entry.id && !SETTLED.has(entry.status));
        if (!waiting.length) return;
        await new Promise((resolve) => setTimeout(resolve, wait));
        let moved = false;
        for (const entry of waiting) {
          let doc;
          try {
            doc = await api(`/api/documents/${encodeURIComponent(entry.id)}`);
          } catch (failure) {
            const gone = failure instanceof ApiError && failure.status === 404;
            this.update(entry, { status: "FAILED", error: gone ? t("documents.upload.gone")
              : t("documents.upload.statusUnknown", { reason: describe(failure) }) });
            continue;
          }
          if (doc.status === entry.status) continue;
          moved = true;
          this.update(entry, { status: doc.status, error: doc.error });
          if (SETTLED.has(doc.status)) this.onSettled(doc);
        }
        wait = moved ? POLL_FIRST_MS : Math.min(POLL_MAX_MS, Math.round(wait * 1.6));
      }
    } finally {
      this.polling = false;
    }
  }

  /** The lines again in the page's (new) language. */
  relabel() {
    for (const entry of this.entries) this.render(entry);
  }
}
