// The upload form: multipart POST, then one status line per file, polled until READY/FAILED.
import { api, describe } from "./api.js";
import { h, say } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/documents.js";

const SETTLED = new Set(["READY", "FAILED"]);
const POLL_MS = 700;

function statusBadge(status) {
  return h("span", { class: `badge status-${status}`, dataset: { role: "status" } },
    statusLabel(status));
}

/** READY, 就绪, …: the status in the page's language (the code itself when unknown). */
export function statusLabel(status) {
  const key = `documents.status.${status}`;
  const label = t(key);
  return label === key ? status : label;
}

/** Show one line per uploaded document and poll it; onSettled(doc) runs once per document. */
export class Uploader {
  constructor({ form, input, button, error, list, kbId, onSettled }) {
    this.input = input;
    this.button = button;
    this.error = error;
    this.list = list;
    this.kbId = kbId;
    this.onSettled = onSettled;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.upload();
    });
  }

  async upload() {
    const kbId = this.kbId();
    const files = [...this.input.files];
    if (!kbId) return say(this.error, t("documents.upload.noKb"));
    if (!files.length) return say(this.error, t("documents.upload.noFiles"));
    say(this.error, "");
    const form = new FormData();
    for (const file of files) form.append("files", file, file.name);
    this.button.disabled = true;
    try {
      const out = await api(`/api/kbs/${encodeURIComponent(kbId)}/documents`,
        { method: "POST", body: form });
      this.input.value = "";
      for (const doc of out.documents) this.track(doc);
    } catch (error) {
      say(this.error, t("documents.error.upload", { reason: describe(error) }));
    } finally {
      this.button.disabled = false;
    }
  }

  track(doc) {
    const status = statusBadge(doc.status);
    const reason = h("span", { class: "reason", hidden: true });
    const note = doc.duplicate ? h("span", { class: "muted small" },
      t("documents.upload.held")) : null;
    const line = h("li", { dataset: { documentId: doc.id, filename: doc.filename } },
      h("span", {}, doc.filename), status, note, reason);
    this.list.prepend(line);
    this.poll(doc, line, status, reason);
  }

  async poll(doc, line, status, reason) {
    let current = doc;
    while (!SETTLED.has(current.status)) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      try {
        current = await api(`/api/documents/${encodeURIComponent(doc.id)}`);
      } catch (error) {
        say(reason, t("documents.upload.statusUnknown", { reason: describe(error) }));
        return;
      }
      status.textContent = statusLabel(current.status);
      status.className = `badge status-${current.status}`;
    }
    line.dataset.status = current.status;
    say(reason, current.status === "FAILED" ? current.error || t("documents.upload.failed") : "");
    this.onSettled(current);
  }
}
