// Stored labelled sets in the evaluation view (retrieval testing, issue 38): the labels file
// chosen in the form can be saved as a named set of the KB (POST /api/kbs/{id}/labelled-sets),
// a stored set can be chosen to evaluate on (sent as set_id, with the feedback and any file),
// and deleted. The controls are built here, inside #eval-form, so debug.html stays as it was.
import { api, describe } from "./api.js";
import { h, say } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/debug.js";

const $ = (id) => document.getElementById(id);

function text(key, tag = "span") {
  return h(tag, { "data-i18n": key }, t(key));
}

export class LabelledSets {
  constructor({ kbId }) {
    this.kbId = kbId;
    this.items = [];
    this.limits = null; // {max_sets, max_bytes}
    this.message = null; // [key, params, isError]
    this.select = h("select", { id: "eval-set" });
    this.name = h("input", { id: "eval-set-name", maxlength: "200", autocomplete: "off",
      "data-i18n-attr": "placeholder:debug.sets.namePlaceholder",
      placeholder: t("debug.sets.namePlaceholder") });
    this.remove = h("button", { type: "button", id: "eval-set-delete", class: "secondary",
      "data-i18n": "debug.sets.delete", hidden: true }, t("debug.sets.delete"));
    const save = h("button", { type: "button", id: "eval-set-save", class: "secondary",
      "data-i18n": "debug.sets.save" }, t("debug.sets.save"));
    this.status = h("p", { id: "eval-set-status", class: "small", role: "status" });
    this.count = h("span", { id: "eval-set-count", class: "small muted" });
    const box = h("fieldset", { id: "eval-sets", class: "eval-sets" },
      h("legend", { "data-i18n": "debug.sets.legend" }, t("debug.sets.legend")),
      h("div", { class: "row" }, h("label", {}, text("debug.sets.choose"), " ", this.select),
        this.remove),
      h("div", { class: "row" }, h("label", {}, text("debug.sets.saveAs"), " ", this.name), save),
      this.count, this.status);
    $("eval-button").before(box);
    this.select.addEventListener("change", () => this.renderButtons());
    save.addEventListener("click", () => this.save());
    this.remove.addEventListener("click", () => this.delete());
  }

  /** The chosen set's id, or null. */
  selected() {
    return this.select.value || null;
  }

  path(suffix = "") {
    return `/api/kbs/${encodeURIComponent(this.kbId())}/labelled-sets${suffix}`;
  }

  async load(choose = null) {
    const previous = choose ?? this.select.value;
    this.items = [];
    this.limits = null;
    if (this.kbId()) {
      try {
        const page = await api(this.path());
        this.items = page.items;
        this.limits = { max_sets: page.max_sets, max_bytes: page.max_bytes };
      } catch (failure) {
        this.say("debug.sets.loadFailed", { reason: describe(failure) }, true);
      }
    }
    this.renderOptions();
    if (this.items.some((item) => item.id === previous)) this.select.value = previous;
    this.renderButtons();
  }

  renderOptions() {
    const value = this.select.value;
    this.select.replaceChildren(h("option", { value: "" }, t("debug.sets.none")),
      ...this.items.map((item) => h("option", { value: item.id },
        t("debug.sets.option", { name: item.name, count: item.queries }))));
    this.select.value = value;
    if (this.select.selectedIndex < 0) this.select.value = "";
    this.count.textContent = this.limits
      ? t("debug.sets.count", { count: this.items.length, max: this.limits.max_sets }) : "";
  }

  renderButtons() {
    this.remove.hidden = !this.select.value;
  }

  say(key, params = {}, isError = false) {
    this.message = key ? [key, params, isError] : null;
    say(this.status, key ? t(key, params) : "");
    this.status.classList.toggle("error", isError);
  }

  async save() {
    const file = $("eval-labels").files[0];
    const name = this.name.value.trim();
    if (!file) return this.say("debug.sets.noFile", {}, true);
    if (!name) {
      this.name.focus();
      return this.say("debug.sets.noName", {}, true);
    }
    try {
      const saved = await api(this.path(), { method: "POST",
        json: { name, labels: await file.text() } });
      this.name.value = "";
      await this.load(saved.id);
      this.say("debug.sets.saved", { name: saved.name, count: saved.queries });
    } catch (failure) {
      this.say("debug.sets.saveFailed", { reason: describe(failure) }, true);
    }
  }

  async delete() {
    const item = this.items.find((entry) => entry.id === this.select.value);
    if (!item) return;
    try {
      await api(this.path(`/${encodeURIComponent(item.id)}`), { method: "DELETE" });
      this.select.value = "";
      await this.load();
      this.say("debug.sets.deleted", { name: item.name });
      this.select.focus();
    } catch (failure) {
      this.say("debug.sets.deleteFailed", { reason: describe(failure) }, true);
    }
  }

  relabel() {
    this.renderOptions();
    if (this.message) this.say(...this.message);
  }
}
