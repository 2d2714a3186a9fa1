// The search options under the chat composer: the mode, the rewrite / rerank / Small2Big
// switches, a document whitelist (docpicker.js) and a metadata filter (filtereditor.js). A
// switch is the reader's choice or, left alone, the server's default, learnt from the trace of
// an answer; only what the reader chose is sent, the server decides the rest.
import { DocPicker } from "./docpicker.js";
import { FilterEditor } from "./filtereditor.js";
import { t } from "./i18n.js";

const $ = (id) => document.getElementById(id);
const SWITCHES = ["rewrite", "rerank", "small2big"];
// issue 38: on a phone the open search options took half the screen after sending; the
// answer needs the room (the chosen options stay chosen, one tap opens them again)
const PHONE = window.matchMedia("(max-width: 720px)");

export class SearchOptions {
  constructor() {
    this.picker = new DocPicker({
      list: $("doc-list"), filter: $("doc-filter"), count: $("doc-count"),
      message: $("doc-limit-message"), clear: $("doc-clear"),
    });
    this.filterEditor = new FilterEditor($("meta-filter"));
    // per switch: the reader's choice (null: the server's default) and that default once known
    this.switches = Object.fromEntries(SWITCHES.map((name) => [name, { chosen: null, known: null }]));
    const render = () => this.render();
    for (const name of SWITCHES) {
      $(`opt-${name}`).addEventListener("change", (event) => {
        this.switches[name].chosen = event.currentTarget.checked;
        render();
      });
    }
    $("opt-reset").addEventListener("click", () => {
      for (const name of SWITCHES) this.switches[name].chosen = null;
      render();
      $("opt-rewrite").focus();
    });
    $("mode").addEventListener("change", render);
    $("doc-list").addEventListener("change", render);
    $("doc-clear").addEventListener("click", () => setTimeout(render));
    $("meta-filter").addEventListener("input", render);
    $("meta-filter").addEventListener("click", () => setTimeout(render)); // a row removed
  }

  /** The KB's READY documents (the picker) and metadata fields (the filter editor). */
  load(kbId) {
    return Promise.all([this.picker.load(kbId), this.filterEditor.load(kbId)]);
  }

  /** The options sent with a message: only what the reader chose. */
  body() {
    const body = {};
    if ($("mode").value) body.mode = $("mode").value;
    for (const name of SWITCHES) {
      if (this.switches[name].chosen !== null) body[name] = this.switches[name].chosen;
    }
    const ids = this.picker.documentIds();
    if (ids) body.document_ids = ids;
    const { filter } = this.filterEditor.value();
    if (filter) body.filter = filter;
    return body;
  }

  /** Whether the filter can be sent (undefined: the editor says what is wrong). */
  checked() {
    return this.filterEditor.checked();
  }

  /** Whether a failed request's error is about the filter (the editor shows it). */
  claims(error) {
    return this.filterEditor.claims(error);
  }

  foldOnPhones() {
    const details = document.getElementById("chat-options");
    if (PHONE.matches && details) details.open = false;
  }

  /** A trace says which switches the server used; those the reader left alone were its
   * defaults. */
  learnDefaults(sent, trace) {
    const requested = trace?.switches_requested || {};
    for (const name of SWITCHES) {
      if (!(name in sent) && typeof requested[name] === "boolean") {
        this.switches[name].known = requested[name];
      }
    }
    this.render();
  }

  render() {
    let changed = $("mode").value ? 1 : 0;
    for (const name of SWITCHES) {
      const box = $(`opt-${name}`);
      const hint = $(`opt-${name}-state`);
      const { chosen, known } = this.switches[name];
      if (chosen !== null) {
        changed += 1;
        box.indeterminate = false;
        box.checked = chosen;
        hint.textContent = "";
      } else if (known !== null) {
        box.indeterminate = false;
        box.checked = known;
        hint.textContent = t(known ? "chat.options.defaultOn" : "chat.options.defaultOff");
      } else {
        box.checked = false;
        box.indeterminate = true;
        hint.textContent = t("chat.options.default");
      }
    }
    if (this.picker.documentIds()) changed += 1;
    if (this.filterEditor.value().filter) changed += 1;
    $("opt-reset").hidden = !SWITCHES.some((name) => this.switches[name].chosen !== null);
    $("options-summary").textContent = changed
      ? t("chat.options.summaryChanged", { count: changed }) : t("chat.options.summary");
  }

  relabel() {
    this.filterEditor.relabel();
    this.render();
  }
}
