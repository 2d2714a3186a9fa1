// Retrieval testing on the debug page (issue 38): the KB's query history and the A/B compare.
//
// History: every Explain of the page is recorded by the server (explain?history=true); the
// list shows the KB's newest ones, and a click puts a query and its options back in the form
// and runs it again. Compare: the query of the form searched with two configurations (mode,
// fusion, rerank, rewrite, top k, KB version), shown as two ranked columns (compare.js).
import { api, describe } from "./api.js";
import { compareColumns } from "./compare.js";
import { h, say } from "./dom.js";
import { timeNode } from "./format.js";
import { t } from "./i18n.js";
import "./strings/debug.js";

const $ = (id) => document.getElementById(id);
const SHOWN = 20; // history entries listed
const VERSION = [0, 1e9];

/** A label whose text follows the language (translatePage re-reads data-i18n). */
function labelled(key, control, cls = "") {
  return h("label", { class: cls }, h("span", { "data-i18n": key }, t(key)), " ", control);
}

function options(values) {
  return values.map(([value, key]) => h("option", { value, "data-i18n": key }, t(key)));
}

/** The controls of one configuration (side "a" or "b"), with its defaults. */
function configFieldset(side, defaults) {
  const id = (name) => `${side}-${name}`;
  const mode = h("select", { id: id("mode") }, ...options([["hybrid", "debug.mode.hybrid"],
    ["dense", "debug.mode.dense"], ["sparse", "debug.mode.sparse"]]));
  mode.value = defaults.mode;
  const fusion = h("select", { id: id("fusion") }, ...options([
    ["", "debug.scoring.defaultOption"], ["rrf", "debug.fusion.rrf"],
    ["weighted", "debug.fusion.weighted"], ["zscore", "debug.fusion.zscore"]]));
  const topK = h("input", { id: id("top-k"), type: "number", min: "1", max: "200", value: "5" });
  const version = h("input", { id: id("version"), type: "number", min: "0", step: "1",
    inputmode: "numeric", "data-i18n-attr": "placeholder:debug.compare.versionActive",
    placeholder: t("debug.compare.versionActive") });
  const check = (name, key, on) => h("label", { class: "check" },
    h("input", { type: "checkbox", id: id(name), checked: on }), " ",
    h("span", { "data-i18n": key }, t(key)));
  const legend = `debug.compare.config${side.toUpperCase()}`;
  return h("fieldset", { id: `config-${side}`, class: "compare-config-set" },
    h("legend", { "data-i18n": legend }, t(legend)),
    h("div", { class: "row" }, labelled("debug.search.mode", mode),
      labelled("debug.scoring.fusion", fusion)),
    h("div", { class: "row" }, labelled("debug.search.topK", topK),
      labelled("debug.compare.version", version)),
    check("rerank", "debug.stage.rerank", defaults.rerank),
    check("rewrite", "debug.stage.rewrite", false));
}

function numberIn(input) {
  if (input.validity.badInput) return Number.NaN;
  return input.value.trim() === "" ? null : Number(input.value);
}

export class RetrievalTesting {
  /** `kbId()`, `query()`, `documentIds()`: the form's; `rerun(record)` runs a record again. */
  constructor({ kbId, query, documentIds, rerun }) {
    Object.assign(this, { kbId, query, documentIds, rerun });
    this.records = [];
    this.shown = null; // the last comparison {outA, outB, bodyA, bodyB}
    $("compare-configs").append(
      configFieldset("a", { mode: "hybrid", rerank: true }),
      configFieldset("b", { mode: "dense", rerank: true }));
    $("compare-form").addEventListener("submit", (event) => this.compare(event));
    $("history-clear").addEventListener("click", () => this.clear());
  }

  // ---------- history ----------

  async refresh() {
    const kbId = this.kbId();
    const error = $("history-error");
    if (!kbId) {
      this.records = [];
      this.renderHistory();
      return;
    }
    try {
      const page = await api(`/api/kbs/${encodeURIComponent(kbId)}/queries?limit=${SHOWN}`);
      this.records = page.items;
      say(error, "");
    } catch (failure) {
      this.records = [];
      say(error, t("debug.history.failed", { reason: describe(failure) }));
    }
    this.renderHistory();
  }

  historyLine(record) {
    const o = record.options || {};
    return t("debug.history.line", {
      mode: t(`debug.mode.${o.mode || "hybrid"}`), topK: o.top_k ?? "–",
      hits: record.hits.length, ms: Math.round(record.latency_ms ?? 0) });
  }

  renderHistory() {
    const list = $("history-list");
    list.replaceChildren(...this.records.map((record) => h("li", {
      class: "history-item", dataset: { recordId: record.id } },
    h("button", { type: "button", class: "link history-run",
      title: t("debug.history.rerun", { query: record.query }),
      onclick: () => this.rerun(record) }, record.query),
    h("span", { class: "small muted history-meta" }, this.historyLine(record), " · ",
      timeNode(record.created_at), record.key_name ? ` · ${record.key_name}` : ""))));
    $("history-empty").hidden = this.records.length > 0;
    $("history-clear").hidden = this.records.length === 0;
  }

  async clear() {
    const kbId = this.kbId();
    if (!kbId) return;
    try {
      await api(`/api/kbs/${encodeURIComponent(kbId)}/queries`, { method: "DELETE" });
    } catch (failure) {
      say($("history-error"), t("debug.history.clearFailed", { reason: describe(failure) }));
      return;
    }
    await this.refresh();
  }

  // ---------- compare ----------

  /** The request body of side "a" or "b", or {error: key, input}. */
  body(side) {
    const topK = numberIn($(`${side}-top-k`));
    if (!Number.isInteger(topK) || topK < 1 || topK > 200) {
      return { error: "debug.error.topK", params: { min: 1, max: 200 }, input: $(`${side}-top-k`) };
    }
    const body = {
      kb_id: this.kbId(), query: this.query(), mode: $(`${side}-mode`).value, top_k: topK,
      rerank: $(`${side}-rerank`).checked, rewrite: $(`${side}-rewrite`).checked,
    };
    if ($(`${side}-fusion`).value) body.fusion = $(`${side}-fusion`).value;
    const version = numberIn($(`${side}-version`));
    if (version !== null) {
      if (!Number.isInteger(version) || version < VERSION[0] || version > VERSION[1]) {
        return { error: "debug.compare.badVersion", params: {}, input: $(`${side}-version`) };
      }
      body.kb_version = version;
    }
    const ids = this.documentIds();
    if (ids) body.document_ids = ids;
    return { body };
  }

  configLine(body, out) {
    const trace = out.trace || {};
    return t("debug.compare.configLine", {
      mode: t(`debug.mode.${body.mode}`),
      // fusion only means something when two channels are fused
      fusion: body.mode === "hybrid" ? t(`debug.fusion.${trace.fusion || body.fusion || "rrf"}`)
        : "–",
      rerank: t(body.rerank ? "debug.stage.on" : "debug.stage.off"),
      rewrite: t(body.rewrite ? "debug.stage.on" : "debug.stage.off"),
      topK: body.top_k,
      version: trace.kb_version ?? t("debug.compare.noVersion"),
      ms: Math.round((trace.timings_ms || {}).total ?? 0) });
  }

  async compare(event) {
    event.preventDefault();
    const error = $("compare-error");
    const button = $("compare-button");
    for (const input of document.querySelectorAll("#compare-form [aria-invalid]")) {
      input.removeAttribute("aria-invalid");
    }
    if (!this.kbId()) return say(error, t("debug.error.noKb"));
    if (!this.query().trim()) return say(error, t("debug.compare.noQuery"));
    const built = [this.body("a"), this.body("b")];
    const bad = built.find((side) => side.error);
    if (bad) {
      bad.input.setAttribute("aria-invalid", "true");
      bad.input.focus();
      return say(error, t(bad.error, bad.params));
    }
    say(error, "");
    button.disabled = true;
    $("compare-result").setAttribute("aria-busy", "true");
    try {
      const [outA, outB] = await Promise.all(built.map(({ body }) => api(
        "/api/retrieval/explain", { method: "POST", json: body })));
      this.shown = { outA, outB, bodyA: built[0].body, bodyB: built[1].body };
      this.renderCompare();
    } catch (failure) {
      say(error, t("debug.compare.failed", { reason: describe(failure) }));
    } finally {
      $("compare-result").removeAttribute("aria-busy");
      button.disabled = false;
    }
  }

  renderCompare() {
    if (!this.shown) return;
    const { outA, outB, bodyA, bodyB } = this.shown;
    const { nodes } = compareColumns(outA, outB, this.configLine(bodyA, outA),
      this.configLine(bodyB, outB));
    $("compare-result").replaceChildren(...nodes);
  }

  /** A language switch: what this module drew itself is drawn again. */
  relabel() {
    this.renderHistory();
    this.renderCompare();
  }
}
