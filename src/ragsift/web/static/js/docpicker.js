// The document whitelist of the debug page: READY documents of the KB, at most MAX selected.
import { api, describe } from "./api.js";
import { h, say } from "./dom.js";
import { formatNumber } from "./format.js";
import { t } from "./i18n.js";
import "./strings/debug.js";

// The server's default RAGSIFT_MAX_DOCUMENT_IDS; a server set lower still answers 4xx, shown.
export const MAX_DOCUMENTS = 50;

export class DocPicker {
  constructor({ list, filter, count, message, clear }) {
    this.list = list;
    this.filter = filter;
    this.count = count;
    this.message = message;
    this.selected = new Set();
    this.documents = [];
    filter.addEventListener("input", () => this.applyFilter());
    clear.addEventListener("click", () => {
      this.selected.clear();
      this.render();
    });
  }

  /** Reload the READY documents of kbId, keeping the selection of documents still READY. */
  async load(kbId) {
    if (!kbId) {
      this.documents = [];
      this.render();
      return;
    }
    try {
      this.documents = await api(`/api/kbs/${encodeURIComponent(kbId)}/documents?status=READY`);
    } catch (error) {
      this.documents = [];
      say(this.message, t("debug.docs.listFailed", { reason: describe(error) }));
    }
    const ready = new Set(this.documents.map((d) => d.id));
    for (const id of [...this.selected]) if (!ready.has(id)) this.selected.delete(id);
    this.render();
  }

  /** Selected ids, or null for "every document". */
  documentIds() {
    return this.selected.size ? [...this.selected] : null;
  }

  toggle(box, id) {
    if (!box.checked) {
      this.selected.delete(id);
      say(this.message, "");
    } else if (this.selected.size >= MAX_DOCUMENTS) {
      box.checked = false;
      say(this.message, t("debug.docs.limit", { max: formatNumber(MAX_DOCUMENTS) }));
    } else {
      this.selected.add(id);
    }
    this.updateCount();
  }

  render() {
    const items = this.documents.map((doc) => {
      const box = h("input", { type: "checkbox", value: doc.id,
        checked: this.selected.has(doc.id) });
      box.addEventListener("change", () => this.toggle(box, doc.id));
      return h("label", { class: "check", dataset: { documentId: doc.id, filename: doc.filename } },
        box, h("span", {}, doc.filename));
    });
    this.list.replaceChildren(...(items.length ? items
      : [h("p", { class: "muted small" }, t("debug.docs.none"))]));
    say(this.message, "");
    this.applyFilter();
    this.updateCount();
  }

  applyFilter() {
    const wanted = this.filter.value.trim().toLowerCase();
    for (const item of this.list.querySelectorAll("label[data-document-id]")) {
      item.hidden = Boolean(wanted) && !item.dataset.filename.toLowerCase().includes(wanted);
    }
  }

  /** Another language: the count and the empty list's line (a message said stays as said). */
  relabel() {
    const none = this.list.querySelector("p.muted");
    if (none) none.textContent = t("debug.docs.none");
    this.updateCount();
  }

  updateCount() {
    this.count.textContent = this.selected.size
      ? t("debug.docs.countSelected", { count: formatNumber(this.selected.size),
        max: formatNumber(MAX_DOCUMENTS) })
      : t("debug.docs.countAll", { count: formatNumber(this.documents.length) });
  }
}
