// Retrieval testing (issue 38): the evaluation view of the debug page.
//
// POST /api/kbs/{id}/evaluation scores the KB per mode on its rated answers and/or a labels
// file and/or a labelled set stored with the KB (labelsets.js); the answer is drawn as grouped bars (inline SVG, no chart library): one group per
// metric, one bar per mode, and on dense and sparse the 95 % paired-bootstrap interval of their
// difference to hybrid, drawn around hybrid's value (hybrid + [low, high]). A table below says
// the same in numbers (what a screen reader reads; the chart is one image to it).
import { api, describe } from "./api.js";
import { h, say } from "./dom.js";
import { formatNumber } from "./format.js";
import { t } from "./i18n.js";
import "./strings/debug.js";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const SHOWN = ["ndcg", "mrr", "recall"];
const BOX = { width: 360, height: 190, left: 34, right: 8, top: 10, bottom: 26 };

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) {
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

const fixed = (value, digits = 3) => formatNumber(value, {
  minimumFractionDigits: digits, maximumFractionDigits: digits });
const signed = (value) => (value >= 0 ? "+" : "") + fixed(value);

/** The grouped bar chart of `out.modes` (values 0..1). */
export function chart(out) {
  const plot = { w: BOX.width - BOX.left - BOX.right, h: BOX.height - BOX.top - BOX.bottom };
  const y = (value) => BOX.top + plot.h * (1 - Math.max(0, Math.min(1, value)));
  const group = plot.w / SHOWN.length;
  const bar = (group * 0.8) / out.modes.length;
  const hybrid = out.modes.find((mode) => mode.mode === out.baseline);
  const parts = [];
  for (const tick of [0, 0.5, 1]) {
    parts.push(svg("line", { class: "grid", x1: BOX.left, x2: BOX.width - BOX.right,
      y1: y(tick), y2: y(tick) }), svg("text", { class: "tick", x: BOX.left - 4,
      y: y(tick) + 4, "text-anchor": "end" }, fixed(tick, 1)));
  }
  SHOWN.forEach((metric, g) => {
    const x0 = BOX.left + g * group + group * 0.1;
    out.modes.forEach((mode, m) => {
      const value = mode.metrics[metric] ?? 0;
      const x = x0 + m * bar;
      parts.push(svg("rect", { class: `bar bar-${mode.mode}`, x: x + 1, y: y(value),
        width: bar - 2, height: Math.max(0, y(0) - y(value)), "data-mode": mode.mode,
        "data-metric": metric, "data-value": value }));
      const interval = mode.intervals?.[metric];
      if (interval && hybrid) {
        const base = hybrid.metrics[metric] ?? 0;
        const cx = x + bar / 2;
        parts.push(svg("line", { class: "whisker", x1: cx, x2: cx,
          y1: y(base + interval.low), y2: y(base + interval.high), "data-mode": mode.mode,
          "data-metric": metric }));
      }
    });
    parts.push(svg("text", { class: "label", x: x0 + (bar * out.modes.length) / 2,
      y: BOX.height - 8, "text-anchor": "middle" }, t(`debug.eval.metric.${metric}`, { k: out.k })));
  });
  return svg("svg", { id: "eval-chart", class: "eval-chart", role: "img",
    viewBox: `0 0 ${BOX.width} ${BOX.height}`, "aria-labelledby": "eval-chart-title" },
  svg("title", { id: "eval-chart-title" }, t("debug.eval.chartTitle", { k: out.k })), ...parts);
}

function legend(out) {
  return h("p", { class: "eval-legend small" }, ...out.modes.map((mode) => h("span", {
    class: "legend-item" }, h("span", { class: `swatch bar-${mode.mode}`, "aria-hidden": "true" }),
  " ", t(`debug.mode.${mode.mode}`))), " ", h("span", { class: "muted" }, t("debug.eval.whiskers")));
}

/** Metrics and intervals as a table: one row per mode. */
function table(out) {
  const head = h("tr", {}, h("th", { scope: "col" }, t("debug.search.mode")),
    ...SHOWN.map((metric) => h("th", { scope: "col", class: "num" },
      t(`debug.eval.metric.${metric}`, { k: out.k }))),
    h("th", { scope: "col", class: "num" }, t("debug.eval.queries")));
  const rows = out.modes.map((mode) => h("tr", { dataset: { mode: mode.mode } },
    h("th", { scope: "row" }, t(`debug.mode.${mode.mode}`)),
    ...SHOWN.map((metric) => {
      const interval = mode.intervals?.[metric];
      return h("td", { class: "num", dataset: { metric } }, fixed(mode.metrics[metric] ?? 0),
        interval ? h("span", { class: `interval small ${interval.significant ? "significant" : "muted"}` },
          " ", t("debug.eval.interval", { mean: signed(interval.mean), low: signed(interval.low),
            high: signed(interval.high) })) : "");
    }),
    h("td", { class: "num" }, String(mode.queries_scored))));
  return h("div", { class: "table-wrap", role: "region", tabindex: "0",
    "aria-label": t("debug.eval.tableLabel") },
  h("table", { id: "eval-table" }, h("thead", {}, head), h("tbody", {}, ...rows)));
}

export class EvalView {
  /** `setId()`: the stored labelled set chosen (labelsets.js), or null. */
  constructor({ kbId, setId = () => null }) {
    this.kbId = kbId;
    this.setId = setId;
    this.out = null;
    $("eval-form").addEventListener("submit", (event) => this.run(event));
  }

  async run(event) {
    event.preventDefault();
    const error = $("eval-error");
    const button = $("eval-button");
    if (!this.kbId()) return say(error, t("debug.error.noKb"));
    const k = Number($("eval-k").value);
    if (!Number.isInteger(k) || k < 1 || k > 100) {
      $("eval-k").setAttribute("aria-invalid", "true");
      return say(error, t("debug.eval.badK"));
    }
    $("eval-k").removeAttribute("aria-invalid");
    const file = $("eval-labels").files[0];
    const body = { feedback: $("eval-feedback").checked, k };
    if (file) body.labels = await file.text();
    if (this.setId()) body.set_id = this.setId();
    say(error, "");
    button.disabled = true;
    $("eval-status").textContent = t("debug.eval.running");
    try {
      this.out = await api(`/api/kbs/${encodeURIComponent(this.kbId())}/evaluation`,
        { method: "POST", json: body });
      this.render();
    } catch (failure) {
      $("eval-status").textContent = "";
      say(error, t("debug.eval.failed", { reason: describe(failure) }));
    } finally {
      button.disabled = false;
    }
  }

  render() {
    const { out } = this;
    if (!out) return;
    const sources = t("debug.eval.sources", { count: out.queries, feedback: out.feedback_queries,
      uploaded: out.uploaded_queries, skipped: out.skipped_feedback });
    const scored = out.labelled_set
      ? t("debug.sets.scored", { sources, name: out.labelled_set }) : sources;
    $("eval-status").textContent = out.ran ? t("debug.eval.done", { sources: scored, k: out.k })
      : scored;
    if (!out.ran) {
      $("eval-result").replaceChildren(h("p", { class: "notice", id: "eval-too-large" },
        t("debug.eval.tooLarge", { count: out.queries, max: out.max_queries }), " ",
        h("code", {}, out.command)));
      return;
    }
    $("eval-result").replaceChildren(h("figure", { class: "eval-figure" }, chart(out),
      h("figcaption", {}, legend(out))), table(out));
  }

  relabel() {
    this.render();
  }
}
