// Markdown answers: marked (GFM, tables) -> DOMPurify -> DOM nodes. Raw HTML in the answer is
// shown as text, never parsed; `[N](citation://N)` becomes a citation link (data-citation=N).
import { Marked } from "../vendor/marked.esm.js";

const DOMPurify = window.DOMPurify; // vendor/purify.min.js, loaded by the page before modules
const CITATION = /^citation:\/\/(\d{1,4})$/;
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
      const n = match[1];
      const label = this.parser.parseInline(token.tokens);
      return `<a class="citation" href="#citation-${n}" data-citation="${n}" `
        + `aria-label="evidence ${n}">${label}</a>`;
    },
  },
});

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img"],
  FORBID_ATTR: ["style", "id", "name"],
  RETURN_DOM_FRAGMENT: true,
};

/** Replace target's children with the rendered, sanitised Markdown of text. */
export function renderMarkdown(target, text) {
  const fragment = DOMPurify.sanitize(marked.parse(text || ""), PURIFY);
  for (const link of fragment.querySelectorAll("a[href]")) {
    if (!link.classList.contains("citation")) {
      link.setAttribute("target", "_blank");
      link.setAttribute("rel", "noopener noreferrer");
    }
  }
  target.replaceChildren(fragment);
}
