// Evidence cards under an answer, and the side panel that shows one piece of evidence exactly:
// file, locator (page / sheet!range / slide / record / pointer / section path), a preview of
// where it sits (the PDF page with the chunk's lines highlighted, the sheet rows as a table,
// the slide, its images) and its text.
//
// The panel is a modal dialog (role=dialog, aria-modal=true on a <section>), the same on every
// screen: while it is open the rest of the page is inert, Tab cycles inside it, Escape or a click
// outside closes it and the focus goes back to the link or card that opened it. On a desktop it
// slides in from the right and the conversation column narrows beside it (the cited sentence
// stays in view, under a transparent backdrop); on a phone it is a sheet over a dimmed backdrop.
import { ObjectUrls } from "./assets.js";
import { h, locatorParts, num, sheetRange } from "./dom.js";
import { t, translatePage } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";
import "./strings/panel.js";

// what the API serves inline (anything else comes as a download and cannot be shown)
const SHOWN_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const isSet = (value) => value !== null && value !== undefined && value !== "";

/** The string for `count` things: `one` for 1, `other` (with {count}) otherwise. */
function plural(count, one, other, params = {}) {
  return t(count === 1 ? one : other, { count, ...params });
}

/** A locator label of dom.js ("Page", "Section", ...) in the page's language. */
function factLabel(label) {
  const key = `panel.fact.${String(label).toLowerCase()}`;
  const text = t(key);
  return text === key ? String(label) : text;
}

/** A FAQ entry's facts (its question, source and id) instead of a file's locator. */
function faqFacts(item) {
  return [["Question", item.question], ["Source", item.source || "—"], ["FAQ", item.chunk_id]];
}

/** "Page 2 · Section Travel › Hotels" for a card ("Question …" for a FAQ entry). */
function whereText(item) {
  if (item.kind === "faq") {
    return t("panel.where", { label: factLabel("Question"), value: item.question });
  }
  return locatorParts(item.locator, item.heading_path)
    .map(([label, value]) => t("panel.where", { label: factLabel(label), value })).join(" · ");
}

/** One card per evidence item; `cited` is the set of numbers the answer cites. */
export function evidenceCards(evidence, cited, onOpen) {
  return h("div", { class: "evidence-cards", "aria-label": t("panel.cards") },
    evidence.map((item) => {
      const where = whereText(item);
      const pictures = (item.assets || []).length;
      return h("button", {
        type: "button",
        class: cited.has(item.n) ? "evidence-card cited" : "evidence-card",
        dataset: { evidence: item.n, chunkId: item.chunk_id },
        onclick: (event) => onOpen(item, event.currentTarget),
      },
      h("strong", {}, t("panel.cardTitle", { n: item.n, filename: item.filename })),
      where ? h("span", { class: "where" }, where) : null,
      h("span", { class: "clamp" }, item.text),
      pictures ? h("span", { class: "where" },
        plural(pictures, "panel.images.one", "panel.images.other")) : null,
      item.score !== undefined
        ? h("span", { class: "where" }, t("panel.score", { score: num(item.score) })) : null);
    }));
}

/** Pixels wide to render a page: the panel's width on this screen, in steps the server caches. */
function pageWidth() {
  const css = Math.min(window.innerWidth || 480, 480) * (window.devicePixelRatio || 1);
  return Math.min(1600, Math.max(400, Math.ceil(css / 200) * 200));
}

/** "595.276x841.89" -> [595.276, 841.89], or null. */
function pageSize(header) {
  const [width, height] = String(header || "").split("x").map(Number);
  return width > 0 && height > 0 ? [width, height] : null;
}

function validBox(box) {
  return Array.isArray(box) && box.length === 4 && box.every(Number.isFinite)
    && box[2] > box[0] && box[3] > box[1];
}

/** A box in PDF points (origin top left) as an overlay placed in percent of the page. */
function overlay([x0, y0, x1, y1], [width, height]) {
  const box = h("div", { class: "page-box", dataset: { part: "box" } });
  // CSSOM, not a style attribute: the page's CSP refuses inline style attributes
  Object.assign(box.style, {
    left: `${(x0 / width) * 100}%`, top: `${(y0 / height) * 100}%`,
    width: `${((x1 - x0) / width) * 100}%`, height: `${((y1 - y0) / height) * 100}%`,
  });
  return box;
}

/** The rendered page of a PDF chunk with its lines' boxes highlighted. */
function pagePreview(item, images) {
  const page = item.locator.page;
  const boxes = (item.locator.boxes || []).filter(validBox);
  const img = h("img", { class: "page-image",
    alt: t("panel.page.alt", { page, filename: item.filename }) });
  const frame = h("div", { class: "page-frame" }, img);
  const status = h("p", { class: "small muted", dataset: { part: "page-status" } },
    t("panel.page.rendering"));
  const figure = h("figure", { class: "page-preview", dataset: { part: "page", page } }, frame,
    h("figcaption", { class: "small muted" },
      boxes.length ? plural(boxes.length, "panel.page.captionBoxes.one",
          "panel.page.captionBoxes.other", { page })
        : t("panel.page.caption", { page })),
    status);
  const path = `/api/documents/${encodeURIComponent(item.document_id)}/pages/`
    + `${encodeURIComponent(page)}.png?width=${pageWidth()}`;
  images.load(path).then((loaded) => {
    if (!loaded) return;
    const size = pageSize(loaded.headers.get("x-page-size"));
    if (size) frame.append(...boxes.map((box) => overlay(box, size)));
    img.addEventListener("load", () => {
      figure.dataset.loaded = "true";
      frame.querySelector(".page-box")?.scrollIntoView({ block: "nearest" });
    }, { once: true });
    img.src = loaded.url;
    status.remove();
  }, (error) => {
    if (error.status === 409) figure.remove(); // not a PDF: no page to show
    else status.textContent = t("panel.page.failed", { reason: error.message || error });
  });
  return figure;
}

/** The rows of a sheet chunk as a table (its text is a Markdown table), under its range. */
function sheetPreview(item) {
  const loc = item.locator;
  const rows = h("div", { class: "markdown sheet-preview", dataset: { part: "sheet" } });
  renderMarkdown(rows, item.text); // sanitised like an answer; shows no image
  const where = loc.sheet ? sheetRange(loc.sheet, loc.cell_range) : loc.cell_range;
  return [h("h3", {}, t("panel.sheet", { range: where })), rows];
}

/** The images of the evidence, each with its caption (and page or slide). */
function assetFigures(assets, images) {
  const figures = assets.map((ref) => {
    const where = isSet(ref.page) ? t("panel.asset.page", { page: ref.page })
      : isSet(ref.slide) ? t("panel.asset.slide", { slide: ref.slide }) : "";
    const caption = [ref.caption, where].filter(Boolean).join(" · ") || t("panel.asset.image");
    if (!SHOWN_TYPES.has(ref.media_type)) {
      return h("p", { class: "small muted" },
        t("panel.asset.notShown", { caption, type: ref.media_type }));
    }
    return h("figure", { class: "asset-figure", dataset: { part: "asset", asset: ref.id } },
      h("img", { class: "asset", alt: ref.caption || t("panel.asset.alt"), width: ref.width,
        height: ref.height, dataset: { asset: ref.id } }),
      h("figcaption", { class: "small muted" }, caption));
  });
  const block = h("div", { class: "asset-figures" }, figures);
  images.fill(block);
  return [h("h3", {}, plural(assets.length, "panel.asset.heading.one",
    "panel.asset.heading.other")), block];
}

/** What shows where the evidence sits: page, sheet rows, slide, images. */
function previews(item, images) {
  const loc = item.locator || {};
  const blocks = [];
  if (isSet(loc.page)) blocks.push(pagePreview(item, images));
  if (isSet(loc.sheet) || isSet(loc.cell_range)) blocks.push(...sheetPreview(item));
  if (isSet(loc.slide)) {
    blocks.push(h("p", { class: "slide-label", dataset: { part: "slide" } },
      t("panel.slide", { slide: loc.slide })));
  }
  if ((item.assets || []).length) blocks.push(...assetFigures(item.assets, images));
  return blocks;
}

// how long the slide in / out takes (app.css, chat-layout block: --evidence-motion)
const MOTION_MS = 220;
const FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]),"
  + " textarea:not([disabled]), [tabindex]:not([tabindex='-1'])";

/** A native modal <dialog> (the API key prompt) is open above everything else. */
const nativeDialogOpen = () => Boolean(document.querySelector("dialog[open]"));

export class EvidencePanel {
  constructor(panel) {
    this.panel = panel;
    this.title = panel.querySelector("[data-part=title]");
    this.body = panel.querySelector("[data-part=body]");
    this.closeButton = panel.querySelector("[data-part=close]");
    this.backdrop = document.getElementById("evidence-backdrop")
      || panel.insertAdjacentElement("beforebegin",
        h("div", { id: "evidence-backdrop", class: "evidence-backdrop", hidden: true }));
    this.item = null; // the item shown, while open
    this.returnFocus = null;
    this.hideTimer = null;
    this.inerted = [];
    this.images = new ObjectUrls();
    translatePage(panel);
    this.closeButton.addEventListener("click", () => this.close());
    this.backdrop.addEventListener("click", () => this.close());
    panel.addEventListener("keydown", (event) => this.trapTab(event));
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.isOpen && !nativeDialogOpen()) {
        event.preventDefault();
        this.close();
      }
    });
    // the focus never rests outside while open (a script or the browser moving it)
    document.addEventListener("focusin", (event) => {
      if (!this.isOpen || nativeDialogOpen() || this.panel.contains(event.target)) return;
      this.closeButton.focus({ preventScroll: true });
    });
    document.addEventListener("ragsift:language", () => {
      translatePage(panel);
      if (this.item) this.render(this.item);
    });
  }

  get isOpen() {
    return this.item !== null && this.panel.isConnected;
  }

  /** Tab and Shift+Tab go round the panel's controls, never to the page behind. */
  trapTab(event) {
    if (event.key !== "Tab" || !this.isOpen) return;
    const stops = [...this.panel.querySelectorAll(FOCUSABLE)]
      .filter((element) => element.getClientRects().length > 0);
    if (!stops.length) return;
    const first = stops[0];
    const last = stops[stops.length - 1];
    const active = document.activeElement;
    if (event.shiftKey && (active === first || !this.panel.contains(active))) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (active === last || !this.panel.contains(active))) {
      event.preventDefault();
      first.focus();
    }
  }

  /** Show one evidence (or citation) item; focus returns to `opener` on close. */
  open(item, opener) {
    const wasOpen = this.isOpen;
    if (!wasOpen || opener) {
      const active = document.activeElement;
      this.returnFocus = opener || (this.panel.contains(active) ? null : active);
    }
    clearTimeout(this.hideTimer);
    this.render(item);
    if (!wasOpen) {
      this.panel.hidden = false;
      this.backdrop.hidden = false;
      void this.panel.offsetWidth; // lay out off-screen first, so the slide-in transitions
      this.panel.classList.add("is-open");
      this.backdrop.classList.add("is-open");
      document.body.classList.add("evidence-open");
      this.inertPage();
    }
    this.closeButton.focus({ preventScroll: true });
    // the column narrows beside the panel: keep the link that opened it in view
    const keep = this.returnFocus;
    setTimeout(() => {
      if (this.isOpen && keep && keep.isConnected) {
        keep.scrollIntoView({ block: "nearest", inline: "nearest" });
      }
    }, MOTION_MS + 30);
  }

  render(item) {
    this.item = item;
    this.images.dispose(); // the previous item's images
    this.images = new ObjectUrls();
    this.panel.dataset.evidence = item.n;
    this.title.textContent = t("panel.title", { n: item.n, filename: item.filename });
    const faq = item.kind === "faq";
    const facts = faq ? faqFacts(item) : [["File", item.filename],
      ...locatorParts(item.locator, item.heading_path), ["Chunk", item.chunk_id]];
    const list = h("dl", { class: "facts", dataset: { part: "locator" } },
      facts.map(([term, value]) => [h("dt", {}, factLabel(term)),
        h("dd", { dataset: { fact: String(term).toLowerCase() } }, value)]));
    const blocks = [list, ...previews(item, this.images),
      h("h3", {}, t(faq ? "panel.faq.answer" : "panel.text")),
      h("pre", { class: "evidence-text", dataset: { part: "text" } }, item.text)];
    if (item.context_text && item.context_text !== item.text) {
      blocks.push(h("h3", {}, t("panel.context")),
        h("pre", { class: "evidence-text", dataset: { part: "context" } }, item.context_text));
    }
    this.body.replaceChildren(...blocks);
    this.body.scrollTop = 0;
  }

  /** Everything but the panel (and native dialogs) stops taking focus, clicks and the AT. */
  inertPage() {
    for (const element of document.body.children) {
      if (element === this.panel || element === this.backdrop || element.inert
        || ["DIALOG", "SCRIPT"].includes(element.tagName)) continue;
      element.inert = true;
      this.inerted.push(element);
    }
  }

  close() {
    if (!this.isOpen) return;
    this.item = null;
    for (const element of this.inerted) element.inert = false;
    this.inerted = [];
    this.panel.classList.remove("is-open");
    this.backdrop.classList.remove("is-open");
    document.body.classList.remove("evidence-open");
    delete this.panel.dataset.evidence;
    clearTimeout(this.hideTimer);
    this.hideTimer = setTimeout(() => { // once it has slid out
      this.panel.hidden = true;
      this.backdrop.hidden = true;
      this.body.replaceChildren();
      this.images.dispose();
      this.images = new ObjectUrls();
    }, MOTION_MS);
    if (this.returnFocus && this.returnFocus.isConnected) this.returnFocus.focus();
    this.returnFocus = null;
  }
}
