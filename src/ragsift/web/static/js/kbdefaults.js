// The knowledge base's own search defaults in the debug form (issue 38): the page reads
// GET /api/kbs/{id}/settings and puts the KB's overrides of mode, fusion, top k, rerank,
// rewrite, Small2Big and min score in the form, each marked "KB default" while it holds that
// value. The form sends what it shows, so an Explain searches with the KB's defaults unless
// the user changed them. Fields the KB does not override keep the page's own defaults; on a
// change of KB the fields the previous KB had set go back to those.
import { api, describe } from "./api.js";
import { h, say } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/debug.js";

const $ = (id) => document.getElementById(id);

// KB setting -> the form's control
const FIELDS = { mode: "mode", fusion: "fusion", top_k: "top-k", rerank: "rerank",
  rewrite: "rewrite", small2big: "small2big", min_score: "min-score" };

function controlValue(input) {
  return input.type === "checkbox" ? input.checked : input.value;
}

function setControl(input, value) {
  if (input.type === "checkbox") input.checked = Boolean(value);
  else input.value = value === null || value === undefined ? "" : String(value);
}

/** The page's own default of a control (what the HTML says). */
function pageDefault(input) {
  if (input.type === "checkbox") return input.defaultChecked;
  if (input.tagName === "SELECT") {
    return ([...input.options].find((o) => o.defaultSelected) || input.options[0]).value;
  }
  return input.defaultValue;
}

export class KbDefaults {
  /** `after`: the element the note goes under (the KB select's label). */
  constructor(after) {
    this.overrides = {};
    this.kbId = "";
    this.loaded = false; // this.kbId's settings were read
    this.message = null; // [key, params] of the note, said again on a language switch
    this.note = h("p", { id: "kb-defaults-note", class: "hint", hidden: true });
    after.after(this.note);
    for (const id of Object.values(FIELDS)) {
      $(id).addEventListener("change", () => this.mark());
      $(id).addEventListener("input", () => this.mark());
    }
  }

  /** Read kbId's settings and put its search overrides in the form (once per KB chosen: a
   * reload of the KB list, e.g. after an upload, keeps what the user changed). */
  async load(kbId) {
    if (kbId === this.kbId && this.loaded) return;
    this.loaded = false;
    for (const key of Object.keys(this.overrides)) {
      if (FIELDS[key]) setControl($(FIELDS[key]), pageDefault($(FIELDS[key])));
    }
    this.overrides = {};
    this.kbId = kbId;
    this.message = null;
    if (kbId) {
      try {
        const settings = await api(`/api/kbs/${encodeURIComponent(kbId)}/settings`);
        if (kbId !== this.kbId) return; // another KB was chosen meanwhile
        this.overrides = Object.fromEntries(Object.entries(settings.overrides)
          .filter(([key]) => FIELDS[key]));
        for (const [key, value] of Object.entries(this.overrides)) setControl($(FIELDS[key]), value);
        this.loaded = true;
        if (Object.keys(this.overrides).length) this.message = ["debug.kbDefault.note", {}];
      } catch (failure) {
        this.message = ["debug.kbDefault.failed", { reason: describe(failure) }];
      }
    }
    this.mark();
    this.renderNote();
  }

  /** Mark each control that holds its KB default (after a load, an edit or a re-run). */
  mark() {
    for (const [key, id] of Object.entries(FIELDS)) {
      const input = $(id);
      const label = input.closest("label");
      const holds = key in this.overrides
        && String(controlValue(input)) === String(this.overrides[key] ?? "");
      const badge = label.querySelector(".kb-default");
      if (holds && !badge) {
        // after the label's text (its own span is re-translated, which would drop a child)
        label.querySelector("span[data-i18n]").after(h("span", {
          class: "badge kb-default", "data-i18n": "debug.kbDefault.badge" },
        t("debug.kbDefault.badge")));
      } else if (!holds && badge) {
        badge.remove();
      }
    }
  }

  renderNote() {
    if (!this.message) return say(this.note, "");
    const [key, params] = this.message;
    const link = h("a", { href: `/web/settings?kb=${encodeURIComponent(this.kbId)}` },
      t("debug.kbDefault.settingsLink"));
    this.note.replaceChildren(t(key, params), " ", link);
    this.note.hidden = false;
  }

  /** A language switch: the note (the badges carry data-i18n). */
  relabel() {
    this.renderNote();
  }
}
