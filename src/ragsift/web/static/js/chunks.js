// The chunk viewer of the documents page: GET /api/documents/{id}/chunks, a page at a time
// (sections first, then their pieces, as the server orders them).
import { api, describe } from "./api.js";
import { h, locatorPhrases, say } from "./dom.js";
import { t } from "./i18n.js";
import { countKey } from "./strings/documents.js";

export const CHUNK_PAGE = 20;

function chunkItem(chunk) {
  const where = locatorPhrases(chunk.locator, chunk.heading_path);
  const kind = t(chunk.level === 0 ? "documents.chunks.section" : "documents.chunks.piece");
  const short = (id) => `${id.slice(0, 8)}…`;
  return h("li", { class: "chunk", dataset: { chunkId: chunk.id, level: String(chunk.level) } },
    h("div", { class: "chunk-meta small muted" },
      h("span", { class: `badge level-${chunk.level}` }, kind),
      h("span", {}, t("documents.chunks.ordinal", { ordinal: chunk.ordinal })),
      h("span", {}, t(countKey("documents.chunks.tokens", chunk.token_count),
        { count: chunk.token_count })),
      where.map((part) => h("span", {}, part)),
      chunk.level === 0 ? h("span", { class: "mono",
        title: t("documents.chunks.sectionIdTitle", { id: chunk.id }) },
      t("documents.chunks.sectionId", { id: short(chunk.id) })) : null,
      chunk.parent_id ? h("span", { class: "mono",
        title: t("documents.chunks.inSectionTitle", { id: chunk.parent_id }) },
      t("documents.chunks.inSection", { id: short(chunk.parent_id) })) : null),
    h("div", { class: "chunk-text", dataset: { part: "text" } }, chunk.text));
}

export class ChunkViewer {
  /** `onTotal(documentId, indexed)` runs whenever a page says how many indexed chunks there are. */
  constructor({ panel, title, summary, error, list, prev, next, range, close, onTotal }) {
    Object.assign(this, { panel, title, summary, error, list, prev, next, range, onTotal });
    this.document = null;
    this.offset = 0;
    this.total = 0;
    this.loading = null;
    this.page = null; // the page shown (redrawn on a language switch)
    prev.addEventListener("click", () => {
      if (!this.loading) this.show(Math.max(0, this.offset - CHUNK_PAGE));
    });
    next.addEventListener("click", () => {
      if (!this.loading) this.show(this.offset + CHUNK_PAGE);
    });
    close.addEventListener("click", () => this.close());
    panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") this.close();
    });
  }

  /** Open the chunks of `doc` at the first page, and move the focus to the panel. */
  async open(doc, returnFocus = null) {
    this.document = doc;
    this.page = null;
    this.returnFocus = returnFocus;
    this.panel.hidden = false;
    this.panel.dataset.documentId = doc.id;
    this.title.textContent = t("documents.chunks.titleOf", { name: doc.filename });
    await this.show(0);
    this.title.focus();
  }

  close() {
    if (this.panel.hidden) return;
    this.panel.hidden = true;
    this.document = null;
    this.page = null;
    this.list.replaceChildren();
    delete this.panel.dataset.documentId;
    if (this.returnFocus && this.returnFocus.isConnected) this.returnFocus.focus();
  }

  /** The document `id` is gone (deleted, its KB deleted): close if it is the one shown. */
  forget(id) {
    if (this.document && this.document.id === id) this.close();
  }

  async show(offset) {
    if (!this.document) return;
    const doc = this.document;
    this.loading = true;
    this.panel.setAttribute("aria-busy", "true");
    say(this.error, "");
    // read before a pager button is disabled: Chromium moves the focus off a disabled one
    const focused = document.activeElement;
    try {
      const page = await api(`/api/documents/${encodeURIComponent(doc.id)}/chunks`
        + `?offset=${offset}&limit=${CHUNK_PAGE}`);
      if (this.document !== doc) return; // another document was opened meanwhile
      this.offset = page.offset;
      this.total = page.total;
      this.onTotal(doc.id, page.indexed);
      this.page = page;
      this.renderPage();
      this.prev.disabled = page.offset === 0;
      this.next.disabled = page.offset + page.chunks.length >= page.total;
    } catch (failure) {
      if (this.document !== doc) return;
      say(this.error, t("documents.chunks.failed", { reason: describe(failure) }));
      this.prev.disabled = offset === 0;
      this.next.disabled = false;
    } finally {
      this.loading = false;
      this.panel.removeAttribute("aria-busy");
      this.keepFocus(focused);
    }
  }

  /** The page shown, in the page's language. */
  renderPage() {
    const { page } = this;
    if (!page) return;
    this.list.replaceChildren(...page.chunks.map(chunkItem));
    this.list.start = page.offset + 1;
    const first = page.chunks.length ? page.offset + 1 : 0;
    const last = page.offset + page.chunks.length;
    const total = page.total;
    this.range.textContent = total ? t("documents.chunks.range", { first, last, total })
      : t("documents.chunks.none");
    say(this.summary, total ? t(countKey("documents.chunks.summary", total),
      { count: total, first, last, indexed: page.indexed, sections: page.sections })
      : t("documents.chunks.summary.empty"));
  }

  /** Another language: the title and the page shown again. */
  relabel() {
    if (!this.document) return;
    this.title.textContent = t("documents.chunks.titleOf", { name: this.document.filename });
    this.renderPage();
  }

  /** A pager button that has just been disabled (first or last page) hands the focus on. */
  keepFocus(focused) {
    if ((focused === this.prev || focused === this.next) && focused.disabled) {
      const other = focused === this.prev ? this.next : this.prev;
      (other.disabled ? this.title : other).focus();
    }
  }
}
