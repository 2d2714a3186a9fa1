// Evidence cards under an answer, and the side panel that shows one piece of evidence exactly:
// file, locator (page / sheet / slide / section path) and its text. Escape closes the panel.
import { h, locatorParts, num } from "./dom.js";

/** One card per evidence item; `cited` is the set of numbers the answer cites. */
export function evidenceCards(evidence, cited, onOpen) {
  return h("div", { class: "evidence-cards", "aria-label": "Evidence" },
    evidence.map((item) => {
      const where = locatorParts(item.locator, item.heading_path)
        .map(([label, value]) => `${label} ${value}`).join(" · ");
      return h("button", {
        type: "button",
        class: cited.has(item.n) ? "evidence-card cited" : "evidence-card",
        dataset: { evidence: item.n, chunkId: item.chunk_id },
        onclick: (event) => onOpen(item, event.currentTarget),
      },
      h("strong", {}, `[${item.n}] ${item.filename}`),
      where ? h("span", { class: "where" }, where) : null,
      h("span", { class: "clamp" }, item.text),
      item.score !== undefined ? h("span", { class: "where" }, `score ${num(item.score)}`) : null);
    }));
}

export class EvidencePanel {
  constructor(panel) {
    this.panel = panel;
    this.title = panel.querySelector("[data-part=title]");
    this.body = panel.querySelector("[data-part=body]");
    this.returnFocus = null;
    panel.querySelector("[data-part=close]").addEventListener("click", () => this.close());
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && !this.panel.hidden) {
        event.preventDefault();
        this.close();
      }
    });
  }

  /** Show one evidence (or citation) item; focus returns to `opener` on close. */
  open(item, opener) {
    this.returnFocus = opener || null;
    this.panel.dataset.evidence = item.n;
    this.title.textContent = `[${item.n}] ${item.filename}`;
    const facts = [["File", item.filename], ...locatorParts(item.locator, item.heading_path),
      ["Chunk", item.chunk_id]];
    const list = h("dl", { class: "facts", dataset: { part: "locator" } },
      facts.map(([term, value]) => [h("dt", {}, term),
        h("dd", { dataset: { fact: term.toLowerCase() } }, value)]));
    const blocks = [list, h("h3", {}, "Text"),
      h("pre", { class: "evidence-text", dataset: { part: "text" } }, item.text)];
    if (item.context_text && item.context_text !== item.text) {
      blocks.push(h("h3", {}, "Context sent to the model (Small2Big)"),
        h("pre", { class: "evidence-text", dataset: { part: "context" } }, item.context_text));
    }
    this.body.replaceChildren(...blocks);
    this.panel.hidden = false;
    this.panel.querySelector("[data-part=close]").focus();
  }

  close() {
    this.panel.hidden = true;
    delete this.panel.dataset.evidence;
    if (this.returnFocus && this.returnFocus.isConnected) this.returnFocus.focus();
    this.returnFocus = null;
  }
}
