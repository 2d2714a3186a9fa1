// Evidence cards under an answer, and the side panel that shows one piece of evidence exactly:
// file, locator (page / sheet!range / slide / record / pointer / section path), a preview of
// where it sits (the PDF page with the chunk's lines highlighted, the sheet rows as a table,
// the slide, its images) and its text. Escape closes the panel.
import { ObjectUrls } from "./assets.js";
import { h, locatorParts, num, sheetRange } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

// what the API serves inline (anything else comes as a download and cannot be shown)
const SHOWN_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const isSet = (value) => value !== null && value !== undefined && value !== "";

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** One card per evidence item; `cited` is the set of numbers the answer cites. */
export function evidenceCards(evidence, cited, onOpen) {
  return h("div", { class: "evidence-cards", "aria-label": "Evidence" },
    evidence.map((item) => {
      const where = locatorParts(item.locator, item.heading_path)
        .map(([label, value]) => `${label} ${value}`).join(" · ");
      const pictures = (item.assets || []).length;
      return h("button", {
        type: "button",
        class: cited.has(item.n) ? "evidence-card cited" : "evidence-card",
        dataset: { evidence: item.n, chunkId: item.chunk_id },
        onclick: (event) => onOpen(item, event.currentTarget),
      },
      h("strong", {}, `[${item.n}] ${item.filename}`),
      where ? h("span", { class: "where" }, where) : null,
      h("span", { class: "clamp" }, item.text),
      pictures ? h("span", { class: "where" }, plural(pictures, "image")) : null,
      item.score !== undefined ? h("span", { class: "where" }, `score ${num(item.score)}`) : null);
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
  const img = h("img", { class: "page-image", alt: `Page ${page} of ${item.filename}` });
  const frame = h("div", { class: "page-frame" }, img);
  const status = h("p", { class: "small muted", dataset: { part: "page-status" } },
    "Rendering the page…");
  const figure = h("figure", { class: "page-preview", dataset: { part: "page", page } }, frame,
    h("figcaption", { class: "small muted" },
      `Page ${page}`, boxes.length ? ` · ${plural(boxes.length, "highlighted line")}` : ""),
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
    else status.textContent = `The page could not be shown: ${error.message || error}`;
  });
  return figure;
}

/** The rows of a sheet chunk as a table (its text is a Markdown table), under its range. */
function sheetPreview(item) {
  const loc = item.locator;
  const rows = h("div", { class: "markdown sheet-preview", dataset: { part: "sheet" } });
  renderMarkdown(rows, item.text); // sanitised like an answer; shows no image
  const where = loc.sheet ? sheetRange(loc.sheet, loc.cell_range) : loc.cell_range;
  return [h("h3", {}, `Sheet ${where}`), rows];
}

/** The images of the evidence, each with its caption (and page or slide). */
function assetFigures(assets, images) {
  const figures = assets.map((ref) => {
    const where = isSet(ref.page) ? `page ${ref.page}`
      : isSet(ref.slide) ? `slide ${ref.slide}` : "";
    const caption = [ref.caption, where].filter(Boolean).join(" · ") || "Image";
    if (!SHOWN_TYPES.has(ref.media_type)) {
      return h("p", { class: "small muted" }, `${caption} (${ref.media_type}, not shown)`);
    }
    return h("figure", { class: "asset-figure", dataset: { part: "asset", asset: ref.id } },
      h("img", { class: "asset", alt: ref.caption || "image", width: ref.width,
        height: ref.height, dataset: { asset: ref.id } }),
      h("figcaption", { class: "small muted" }, caption));
  });
  const block = h("div", { class: "asset-figures" }, figures);
  images.fill(block);
  return [h("h3", {}, assets.length === 1 ? "Image" : "Images"), block];
}

/** What shows where the evidence sits: page, sheet rows, slide, images. */
function previews(item, images) {
  const loc = item.locator || {};
  const blocks = [];
  if (isSet(loc.page)) blocks.push(pagePreview(item, images));
  if (isSet(loc.sheet) || isSet(loc.cell_range)) blocks.push(...sheetPreview(item));
  if (isSet(loc.slide)) {
    blocks.push(h("p", { class: "slide-label", dataset: { part: "slide" } }, `slide ${loc.slide}`));
  }
  if ((item.assets || []).length) blocks.push(...assetFigures(item.assets, images));
  return blocks;
}

export class EvidencePanel {
  constructor(panel) {
    this.panel = panel;
    this.title = panel.querySelector("[data-part=title]");
    this.body = panel.querySelector("[data-part=body]");
    this.returnFocus = null;
    this.images = new ObjectUrls();
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
    this.images.dispose(); // the previous item's images
    this.images = new ObjectUrls();
    this.panel.dataset.evidence = item.n;
    this.title.textContent = `[${item.n}] ${item.filename}`;
    const facts = [["File", item.filename], ...locatorParts(item.locator, item.heading_path),
      ["Chunk", item.chunk_id]];
    const list = h("dl", { class: "facts", dataset: { part: "locator" } },
      facts.map(([term, value]) => [h("dt", {}, term),
        h("dd", { dataset: { fact: term.toLowerCase() } }, value)]));
    const blocks = [list, ...previews(item, this.images), h("h3", {}, "Text"),
      h("pre", { class: "evidence-text", dataset: { part: "text" } }, item.text)];
    if (item.context_text && item.context_text !== item.text) {
      blocks.push(h("h3", {}, "Context sent to the model (Small2Big)"),
        h("pre", { class: "evidence-text", dataset: { part: "context" } }, item.context_text));
    }
    this.body.replaceChildren(...blocks);
    this.panel.scrollTop = 0;
    this.panel.hidden = false;
    this.panel.querySelector("[data-part=close]").focus();
  }

  close() {
    this.panel.hidden = true;
    delete this.panel.dataset.evidence;
    this.body.replaceChildren();
    this.images.dispose();
    this.images = new ObjectUrls();
    if (this.returnFocus && this.returnFocus.isConnected) this.returnFocus.focus();
    this.returnFocus = null;
  }
}
