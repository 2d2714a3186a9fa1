// One question/answer turn of the chat page: the question, the Markdown answer (re-rendered as
// deltas stream in), evidence cards, and the retrieval trace folded away. The answer may show
// the images of its turn (the server's kept `assets`) and of its evidence, nothing else; their
// object URLs live as long as the turn's element (dispose() when it is removed). The status
// line is kept as a key and parameters, so a change of language re-renders it (relabel()).
import { ObjectUrls } from "./assets.js";
import { evidenceCards } from "./chatcards.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";
import "./strings/chat.js";
import { traceSections } from "./trace.js";
import { planParts } from "./turntools.js";

const RENDER_EVERY_MS = 40;

export class TurnView {
  constructor(question, onOpenEvidence) {
    this.question = question;
    this.onOpenEvidence = onOpenEvidence;
    this.tools = null; // TurnTools (turntools.js), attached by chat.js
    this.evidence = [];
    this.citations = [];
    this.assets = [];
    this.images = new ObjectUrls();
    this.text = "";
    this.timer = null;
    this.trace = null;
    this.statusKey = null; // [key, params] of the status line, re-rendered on a language change
    this.markdown = h("div", { class: "markdown" });
    this.status = h("p", { class: "status", role: "status", hidden: true });
    this.cards = h("div", { class: "cards-slot" });
    this.traceSlot = h("div", { class: "trace-slot" });
    // the plan's route (when it did not just search) and whether history was used
    this.plan = h("p", { class: "turn-plan small muted", hidden: true });
    this.toolsSlot = h("div", { class: "tools-slot" });
    this.versionSlot = h("div", { class: "version-slot" });
    this.element = h("article", { class: "turn" },
      h("div", { class: "question" }, question), this.plan,
      h("div", { class: "answer" }, this.markdown, this.status),
      this.toolsSlot, this.versionSlot, this.cards, this.traceSlot);
  }

  /** The evidence item (or, failing that, the citation) numbered n. */
  item(n) {
    return this.evidence.find((e) => e.n === n) || this.citations.find((c) => c.n === n) || null;
  }

  setEvidence(evidence) {
    this.evidence = evidence || [];
    this.renderCards();
  }

  /** The asset ids this answer may show: its own images and those of its evidence. */
  allowedAssets() {
    const ids = new Set(this.assets.map((a) => a.id));
    for (const item of this.evidence) for (const a of item.assets || []) ids.add(a.id);
    return ids;
  }

  render() {
    const allowed = this.allowedAssets();
    renderMarkdown(this.markdown, this.text, { allowed, images: this.images });
  }

  /** The cards; none without evidence: the answer itself says so (once). */
  renderCards() {
    const cited = new Set(this.citations.map((c) => c.n));
    this.cards.replaceChildren(this.evidence.length
      ? evidenceCards(this.evidence, cited, this.onOpenEvidence) : "");
  }

  attachTools(tools) {
    this.tools = tools;
    this.toolsSlot.replaceChildren(tools.element);
  }

  renderPlan() {
    const parts = planParts(this.trace);
    this.plan.textContent = parts.map((part) => t(...part)).join(" · ");
    this.plan.hidden = !parts.length;
    if (parts.length) this.element.dataset.route = this.trace?.route?.route || "search";
  }

  setTrace(trace) {
    if (!trace) return;
    this.trace = trace;
    this.renderPlan();
    const open = this.traceSlot.querySelector("details")?.open;
    this.traceSlot.replaceChildren(h("details", { class: "turn-trace", open: Boolean(open) },
      h("summary", {}, t("chat.trace")), ...traceSections(trace)));
  }

  /** Render again what holds words, in the page's (new) language. */
  relabel() {
    this.render();
    this.renderCards();
    if (this.trace) this.setTrace(this.trace);
    if (this.statusKey) this.setStatus(...this.statusKey);
    this.tools?.render();
    this.onRelabel?.();
  }

  /** Append streamed text; the Markdown is re-rendered at most every RENDER_EVERY_MS. */
  appendDelta(text) {
    this.text += text;
    if (this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.render();
      }, RENDER_EVERY_MS);
    }
  }

  /** The validated final answer, the citations and the images it keeps. */
  setAnswer(answer, citations, assets) {
    clearTimeout(this.timer);
    this.timer = null;
    this.text = answer || "";
    this.citations = citations || [];
    this.assets = assets || [];
    this.element.dataset.answered = "true";
    this.render();
    if (this.evidence.length) this.renderCards();
  }

  /** Flush pending streamed text (after a stop or a failure). */
  flush() {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
      this.render();
    }
  }

  /** The turn leaves the page: stop rendering and revoke its images' object URLs. */
  dispose() {
    clearTimeout(this.timer);
    this.timer = null;
    this.images.dispose();
  }

  /** The status line: t(key, params), or none for a null key; `kind` styles it. */
  setStatus(key, params = {}, kind = "") {
    this.statusKey = key ? [key, params, kind] : null;
    const message = key ? t(key, params) : "";
    this.status.textContent = message;
    this.status.hidden = !message;
    this.status.className = kind ? `status ${kind}` : "status";
    if (kind) this.element.dataset.state = kind;
    else delete this.element.dataset.state;
  }
}
