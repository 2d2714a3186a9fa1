// The tools under an answer (issue 38): copy it as Markdown or as plain text, rate it (thumbs
// up / down, then an optional comment, the cited sources that were wrong and what was
// missing: POST .../turns/{id}/feedback, a second one replaces the first), and regenerate the
// conversation's last answer (chat.js decides where that button shows). Also the turn's plan:
// its route when the plan did not simply search, and whether it was searched as a follow-up.
import { api, describe } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/chat.js";

/** The answer's Markdown with ragsift's own links made plain: `[n](citation://n)` -> `[n]`,
 * an image `![caption](asset://id)` -> its caption. */
export function portableMarkdown(text) {
  return (text || "")
    .replace(/!\[([^\]]*)\]\(asset:\/\/[^)]*\)/g, (_, caption) => caption ? `(${caption})` : "")
    .replace(/\[([^\]]*)\]\(citation:\/\/[^)]*\)/g, "[$1]");
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // no clipboard permission (or an old browser): the selection fallback
    const area = h("textarea", { class: "visually-hidden", "aria-hidden": "true" });
    area.value = text;
    document.body.append(area);
    area.select();
    const done = document.execCommand("copy");
    area.remove();
    return done;
  }
}

/** The plan line's [key, params] parts of a trace (none for a plain search). */
export function planParts(trace) {
  const parts = [];
  const route = trace?.route?.route;
  if (route && route !== "search") parts.push([`chat.plan.route.${route}`, {}]);
  if (trace?.history?.status === "applied") parts.push(["chat.plan.history", {}]);
  return parts;
}

export class TurnTools {
  /** `ids()` -> {conversationId, turnId} once the turn is stored; `onRegenerate(view)`. */
  constructor(view, { ids, onRegenerate }) {
    this.view = view;
    this.ids = ids;
    this.onRegenerate = onRegenerate;
    this.feedback = null; // the stored feedback
    this.formOpen = false;
    this.noticeKey = null;
    this.element = h("div", { class: "turn-tools" });
    this.render();
  }

  setFeedback(feedback) {
    this.feedback = feedback || null;
    this.render();
  }

  setRegenerable(on) {
    this.regenerable = on;
    this.render();
  }

  say(key, params = {}) {
    this.noticeKey = key ? [key, params] : null;
    this.render();
  }

  button(key, cls, onclick, extra = {}) {
    return h("button", { type: "button", class: `secondary small ${cls}`, onclick, ...extra },
      t(key));
  }

  render() {
    const rating = this.feedback?.rating;
    const stored = Boolean(this.ids()?.turnId);
    const row = h("div", { class: "tools-row", role: "group", "aria-label": t("chat.tools") },
      this.button("chat.copy.markdown", "copy-markdown", () => this.copy(true)),
      this.button("chat.copy.plain", "copy-plain", () => this.copy(false)),
      stored ? this.button("chat.feedback.up", "rate-up", () => this.rate("up"),
        { "aria-pressed": String(rating === "up") }) : null,
      stored ? this.button("chat.feedback.down", "rate-down", () => this.rate("down"),
        { "aria-pressed": String(rating === "down") }) : null,
      stored && this.regenerable
        ? this.button("chat.regenerate", "regenerate", () => this.onRegenerate(this.view)) : null);
    const notice = h("p", { class: "tools-notice small muted", role: "status" },
      this.noticeKey ? t(...this.noticeKey) : "");
    this.element.replaceChildren(row, notice, this.formOpen ? this.form() : "");
  }

  async copy(markdown) {
    const text = markdown ? portableMarkdown(this.view.text)
      : this.view.markdown.innerText.trim();
    const done = await copyText(text);
    this.say(done ? (markdown ? "chat.copy.doneMarkdown" : "chat.copy.donePlain")
      : "chat.copy.failed");
  }

  async rate(rating) {
    this.formOpen = true;
    await this.post({ rating });
    this.element.querySelector("form.feedback textarea")?.focus();
  }

  async post(body) {
    const { conversationId, turnId } = this.ids();
    try {
      const saved = await api(`/api/conversations/${encodeURIComponent(conversationId)}/turns/`
        + `${encodeURIComponent(turnId)}/feedback`, { method: "POST", json: body });
      this.feedback = saved.feedback;
      this.noticeKey = ["chat.feedback.saved", {}];
    } catch (error) {
      this.noticeKey = ["chat.feedback.failed", { reason: describe(error) }];
    }
    this.render();
  }

  /** The optional details of a rating: a comment, wrong sources (down), what was missing. */
  form() {
    const down = this.feedback?.rating === "down";
    const comment = h("textarea", { name: "comment", rows: "2", maxlength: "2000" });
    comment.value = this.feedback?.comment || "";
    const fields = [h("label", {}, t("chat.feedback.comment"), comment)];
    if (down) {
      const wrong = new Set(this.feedback?.wrong_sources || []);
      const cited = this.view.citations.length ? this.view.citations : this.view.evidence;
      if (cited.length) {
        fields.push(h("fieldset", { class: "wrong-sources" },
          h("legend", {}, t("chat.feedback.wrong")),
          ...cited.map((item) => h("label", {},
            h("input", { type: "checkbox", name: "wrong", value: item.chunk_id,
              checked: wrong.has(item.chunk_id) }),
            ` [${item.n}] ${item.filename}`))));
      }
      const missing = h("input", { type: "text", name: "missing", maxlength: "2000" });
      missing.value = this.feedback?.missing || "";
      fields.push(h("label", {}, t("chat.feedback.missing"), missing));
    }
    const form = h("form", { class: "feedback" }, ...fields,
      h("div", { class: "actions" },
        h("button", { type: "submit", class: "small" }, t("chat.feedback.send")),
        this.button("chat.feedback.close", "close", () => {
          this.formOpen = false;
          this.render();
        })));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const body = { rating: this.feedback?.rating || "up" };
      const text = String(data.get("comment") || "").trim();
      if (text) body.comment = text;
      if (down) {
        body.wrong_sources = data.getAll("wrong").map(String);
        const missing = String(data.get("missing") || "").trim();
        if (missing) body.missing = missing;
      }
      this.formOpen = false;
      this.post(body);
    });
    return form;
  }
}
