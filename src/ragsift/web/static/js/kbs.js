// The knowledge base picker of the management pages (documents, FAQ): the KB chosen is kept in
// the address (?kb=ID), so a reload shows the same one; creating and deleting KBs (deleting
// asks for the KB's name to be typed first).
import { api, describe } from "./api.js";
import { openDialog } from "./dialog.js";
import { h, say } from "./dom.js";

const LIST_FAILED = "Could not list knowledge bases: ";

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
      if (this.error.textContent.startsWith(LIST_FAILED)) say(this.error, "");
    } catch (failure) {
      this.kbs = [];
      say(this.error, LIST_FAILED + describe(failure));
    }
    const wanted = selectId || this.select.value
      || new URLSearchParams(location.search).get("kb");
    this.select.replaceChildren(...this.kbs.map((kb) => h("option", { value: kb.id },
      `${kb.name} (${kb.ready}/${kb.documents} ready, ${kb.faq} FAQ)`)));
    if (this.kbs.some((kb) => kb.id === wanted)) this.select.value = wanted;
    this.select.disabled = this.kbs.length === 0;
    this.empty.hidden = this.kbs.length > 0;
    this.remember();
    return this.current();
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
    title: `Delete the knowledge base “${kb.name}”?`,
    description: `Its ${kb.documents} document${kb.documents === 1 ? "" : "s"} (originals, `
      + `chunks, both indexes) and ${kb.faq} FAQ entr${kb.faq === 1 ? "y" : "ies"} are `
      + "deleted with it. This cannot be undone.",
    fields: [
      h("label", { for: "kb-delete-name" }, "Type the name of the knowledge base to confirm",
        input),
      h("p", { id: "kb-delete-hint", class: "small muted" }, "Name: ",
        h("span", { class: "mono" }, kb.name)),
    ],
    submitLabel: "Delete knowledge base",
    danger: true,
    ready: () => input.value === kb.name,
    submit: async () => {
      await api(`/api/kbs/${encodeURIComponent(kb.id)}`, { method: "DELETE" });
      return true;
    },
  });
  return Boolean(deleted);
}
