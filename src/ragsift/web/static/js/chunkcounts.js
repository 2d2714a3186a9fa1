// The documents table's chunk counts. A document carries no count, so each READY row asks the
// chunks endpoint for one chunk (`limit=1`) and shows its `indexed` count (the searched
// pieces, what `ragsift ingest` reports; the sections they belong to are not counted), lazily:
// only for rows scrolled into view, two requests at a time, remembered until the document
// changes. Opening the chunks shows the same total.
import { api, describe } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";

const COUNT_AT_ONCE = 2;

const stamp = (doc) => `${doc.status}|${doc.updated_at}|${doc.sha256}`;

export class ChunkCounts {
  /** `documentOf(id)`: the document shown under that id (or undefined); `onCount(id)`: its
   * count is known (or failed), redraw it. */
  constructor({ documentOf, onCount }) {
    this.documentOf = documentOf;
    this.onCount = onCount;
    this.counts = new Map(); // id -> {stamp, total}: the chunk count of that version of it
    this.queue = [];
    this.counting = 0;
    this.observer = "IntersectionObserver" in window ? new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        this.observer.unobserve(entry.target);
        this.want(entry.target.dataset.documentId);
      }
    }) : null;
  }

  /** The count of this version of `doc`, null while unknown. */
  known(doc) {
    const known = this.counts.get(doc.id);
    return known && known.stamp === stamp(doc) ? known.total : null;
  }

  /** A total learnt elsewhere (the chunk viewer) for this version of `doc`. */
  set(doc, total) {
    this.counts.set(doc.id, { stamp: stamp(doc), total });
    this.onCount(doc.id);
  }

  want(id) {
    const doc = this.documentOf(id);
    if (!doc || doc.status !== "READY" || this.known(doc) !== null || this.queue.includes(id)) return;
    this.queue.push(id);
    this.pump();
  }

  pump() {
    while (this.counting < COUNT_AT_ONCE && this.queue.length) {
      const id = this.queue.shift();
      const doc = this.documentOf(id);
      if (!doc || doc.status !== "READY" || this.known(doc) !== null) continue;
      this.counting += 1;
      const seen = stamp(doc);
      api(`/api/documents/${encodeURIComponent(id)}/chunks?offset=0&limit=1`)
        .then((page) => this.counts.set(id, { stamp: seen, total: page.indexed }))
        .catch((failure) => this.counts.set(id,
          { stamp: seen, total: null, error: describe(failure) }))
        .finally(() => {
          this.counting -= 1;
          this.onCount(id);
          this.pump();
        });
    }
  }

  /** The count cell's content for `doc`. */
  cell(doc) {
    const known = this.counts.get(doc.id);
    if (doc.status !== "READY") return h("span", { class: "muted" }, "–");
    if (!known || known.stamp !== stamp(doc)) return h("span", { class: "muted" }, "…");
    if (known.total === null) {
      return h("span", { class: "muted", title: t("documents.count.failed", { reason: known.error }) },
        "?");
    }
    return String(known.total);
  }

  /** Count `doc` once its row scrolls into view (when its count is unknown). */
  watch(row, doc) {
    if (this.observer && doc.status === "READY" && this.known(doc) === null) {
      this.observer.observe(row);
    }
  }

  unwatch(row) {
    if (this.observer) this.observer.unobserve(row);
  }

  forget(id) {
    this.counts.delete(id);
  }

  /** Another KB: nothing queued or watched any more (known counts stay known). */
  reset() {
    this.queue.length = 0;
    if (this.observer) this.observer.disconnect();
  }
}
