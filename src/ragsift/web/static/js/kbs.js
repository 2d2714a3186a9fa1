// The knowledge base picker of the management pages (documents, FAQ): the KB chosen is kept in
// the address (?kb=ID), so a reload shows the same one; creating and deleting KBs (deleting
// asks for the KB's name to be typed first).
import { api, describe } from "./api.js";
import { openDialog } from "./dialog.js";
import { h, say } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/common.js";
import "./strings/documents.js";

export class KbPicker {
  constructor({ select, empty, error, onChange }) {
    this.select = select;
    this.empty = empty;
    this.error = error;
    this.onChange = onChange;
    this.kbs = [];
    select.addEventListener("change", () => {
      this.remember();
      this.onChange(this.current());
    });
  }

  /** The chosen KB ({id, name, documents, ready, faq, ...}), or null. */
  current() {
    return this.kbs.find((kb) => kb.id === this.select.value) || null;
  }

  /** Reload the KB list, keeping (or choosing `selectId`, then ?kb=, then the first). */
  async load(selectId = null) {
    try {
      this.kbs = await api("/api/kbs");
      if (this.error.dataset.failed === "kbs") {
        say(this.error, "");
        delete this.error.dataset.failed;
      }
    } catch (failure) {
      this.kbs = [];
      say(this.error, t("documents.kb.listFailed", { reason: describe(failure) }));
      this.error.dataset.failed = "kbs";
    }
    const wanted = selectId || this.select.value
      || new URLSearchParams(location.search).get("kb");
    this.render();
    if (this.kbs.some((kb) => kb.id === wanted)) this.select.value = wanted;
    this.select.disabled = this.kbs.length === 0;
    this.empty.hidden = this.kbs.length > 0;
    this.remember();
    return this.current();
  }

  /** The options, in the page's language (again after a language switch), keeping the choice. */
  render() {
    const chosen = this.select.value;
    this.select.replaceChildren(...this.kbs.map((kb) => h("option", { value: kb.id },
      t("documents.kb.option", { name: kb.name, ready: kb.ready, documents: kb.documents,
        faq: kb.faq }))));
    if (this.kbs.some((kb) => kb.id === chosen)) this.select.value = chosen;
  }

  /** Put the chosen KB in the address without a new history entry. */
  remember() {
    const url = new URL(location.href);
    if (this.select.value) url.searchParams.set("kb", this.select.value);
    else url.searchParams.delete("kb");
    history.replaceState(null, "", url);
  }
}

/** Links marked data-keep-kb (to the other management page) open the same KB. */
export function keepKbInLinks(kb) {
  for (const link of document.querySelectorAll("a[data-keep-kb]")) {
    const url = new URL(link.getAttribute("href"), location.href);
    if (kb) url.searchParams.set("kb", kb.id);
    else url.searchParams.delete("kb");
    link.setAttribute("href", url.pathname + url.search);
  }
}

/** POST /api/kbs; the new KB. */
export function createKb(name) {
  return api("/api/kbs", { method: "POST", json: { name } });
}

/**
 * Ask for the KB's name to be typed, then delete it; true when it was deleted. The dialog
 * names what goes with it (documents, FAQ entries).
 */
export async function confirmDeleteKb(kb) {
  const input = h("input", { id: "kb-delete-name", autocomplete: "off", spellcheck: "false",
    autocapitalize: "off", "aria-describedby": "kb-delete-hint" });
  const deleted = await openDialog({
    name: "kb-delete",
    title: t("documents.kb.deleteTitle", { name: kb.name }),
    description: t("documents.kb.deleteDescription", { documents: kb.documents, faq: kb.faq }),
    fields: [
      h("label", { for: "kb-delete-name" }, t("documents.kb.deleteLabel"), input),
      h("p", { id: "kb-delete-hint", class: "small muted mono" },
        t("documents.kb.deleteHint", { name: kb.name })),
    ],
    submitLabel: t("documents.kb.deleteSubmit"),
    danger: true,
    ready: () => input.value === kb.name,
    submit: async () => {
      await api(`/api/kbs/${encodeURIComponent(kb.id)}`, { method: "DELETE" });
      return true;
    },
  });
  return Boolean(deleted);
}
