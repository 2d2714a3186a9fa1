// Markdown answers: marked (GFM, tables) -> DOMPurify -> DOM nodes. Raw HTML in the answer is
// shown as text, never parsed; `[来源 N](citation://N)` (any label: the target decides) becomes
// a citation chip (data-citation=N) showing its label, its accessible name the label too (a
// bare number "1" is named "Source 1" / "来源 1", which contains what is shown). A combined
// target `citation://1,2` (the server splits those; they show while an answer streams) becomes
// one chip per number.
// An image is shown only as `![caption](asset://ID)` with ID in the caller's `allowed` set (the
// images of that answer and of its evidence): it becomes <img data-asset=ID> with no src, and
// `images` (assets.js) loads its bytes through the API helper. Every other image is dropped.
import { Marked } from "../vendor/marked.esm.js";
import { ASSET_ID } from "./assets.js";
import { t } from "./i18n.js";
import "./strings/chat.js";

const DOMPurify = window.DOMPurify; // vendor/purify.min.js, loaded by the page before modules
const CITATION = /^citation:\/\/(\d{1,4}(?:\s*(?:,|%2C|，)\s*\d{1,4})*)$/i;
const LABEL_NUMBERS = /^\s*([^\d\s,，]{0,16}?)\s*\d{1,4}(?:\s*[,，]\s*\d{1,4})*\s*$/;
const ASSET = /^asset:\/\/([A-Za-z0-9_-]{1,64})$/;
const IMAGE_ATTRS = new Set(["class", "alt", "data-asset"]);
const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const marked = new Marked({ gfm: true, breaks: false, async: false });
marked.use({
  renderer: {
    // model output is Markdown, not HTML: any tag in it is displayed literally
    html(token) {
      return escapeHtml(token.text);
    },
    link(token) {
      const match = CITATION.exec(token.href || "");
      if (!match) return false; // the default renderer; DOMPurify vets the URL
      const numbers = match[1].split(/\s*(?:,|%2C|，)\s*/i).map(Number);
      const text = token.text || "";
      const labelled = LABEL_NUMBERS.exec(text);
      return numbers.map((n) => {
        let label;
        if (numbers.length === 1 && !labelled) label = this.parser.parseInline(token.tokens);
        else label = escapeHtml(labelled && labelled[1] ? `${labelled[1]} ${n}` : String(n));
        const bare = !labelled || !labelled[1]; // just a number: named "Source N"
        const name = bare && (numbers.length > 1 || labelled)
          ? ` aria-label="${escapeHtml(t("chat.citation.name", { n }))}"` : "";
        return `<a class="citation" href="#citation-${n}" data-citation="${n}"${name}>${label}</a>`;
      }).join("");
    },
    image(token) {
      const match = ASSET.exec(token.href || "");
      if (!match) return ""; // a remote, data: or any other image never loads
      return `<img class="asset" data-asset="${match[1]}" alt="${escapeHtml(token.text || "")}">`;
    },
  },
});

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "picture", "source",
    "svg", "video", "audio"],
  FORBID_ATTR: ["style", "id", "name", "src", "srcset"],
  RETURN_DOM_FRAGMENT: true,
};

/** Keep an img only when it names an allowed asset, with nothing but its class, alt and id. */
function vetImages(fragment, allowed) {
  for (const img of fragment.querySelectorAll("img")) {
    const id = img.getAttribute("data-asset") || "";
    if (!ASSET_ID.test(id) || !allowed.has(id)) {
      img.remove();
      continue;
    }
    for (const { name } of [...img.attributes]) {
      if (!IMAGE_ATTRS.has(name)) img.removeAttribute(name);
    }
    img.className = "asset";
  }
}

/**
 * Replace target's children with the rendered, sanitised Markdown of text; `allowed` is the
 * set of asset ids this text may show, `images` the ObjectUrls that loads them.
 */
export function renderMarkdown(target, text, { allowed = new Set(), images = null } = {}) {
  const fragment = DOMPurify.sanitize(marked.parse(text || ""), PURIFY);
  vetImages(fragment, images ? allowed : new Set());
  for (const link of fragment.querySelectorAll("a[href]")) {
    if (!link.classList.contains("citation")) {
      link.setAttribute("target", "_blank");
      link.setAttribute("rel", "noopener noreferrer");
    }
  }
  target.replaceChildren(fragment);
  if (images) images.fill(target);
}
