// Rendering a RetrievalTrace (and the hits it explains) as tables; shared by the debug page and
// the chat page's folded trace. Every wide table sits in a focusable, named scroll region
// (role=region, tabindex=0), so a keyboard can scroll it when it is wider than its card.
//
// The hits table fits a 1366 px screen: a fixed layout with compact score cells (dense and
// sparse show the score over the rank), the section path and locator on one line each (the
// whole value in the title), and a detail row per hit (toggled by the first cell's button) with
// the full section path, locator, ids, text and Small2Big context.
import { h, int, num } from "./dom.js";
import { locatorFull, locatorShort } from "./format.js";
import { t } from "./i18n.js";
import "./strings/debug.js";

// [trace key, catalogue key of its label]
const SWITCHES = [
  ["rewrite", "debug.stage.rewrite"],
  ["feedback", "debug.stage.feedback"],
  ["rerank", "debug.stage.rerank"],
  ["small2big", "debug.stage.small2big"],
  ["auto_merge", "debug.stage.auto_merge"],
  ["consistency", "debug.stage.consistency"],
];
const OTHER_STAGES = [
  ["tuned_fusion", "debug.stage.tuned_fusion"],
  ["threshold", "debug.stage.threshold"],
  ["faq", "debug.stage.faq"],
];
const STATUSES = new Set(["off", "applied", "skipped", "failed"]);
const METHODS = new Set(["original", "step_back", "hyde", "expand", "translation"]);

/** The catalogue string for `key`, or `fallback` where the catalogue has none. */
function known(key, fallback) {
  const text = t(key);
  return text === key ? String(fallback) : text;
}

function badge(status) {
  return h("span", { class: `badge status-${status}`, dataset: { status } },
    STATUSES.has(status) ? t(`debug.status.${status}`) : status);
}

/** A table in a focusable scroll region named `label`; headers are [label, numeric, col]. */
function table(id, label, headers, rows) {
  const head = h("tr", {}, headers.map(([text, numeric, col]) =>
    h("th", { scope: "col", class: numeric ? "num" : null, dataset: col ? { col } : null },
      text)));
  return h("div", { class: "table-wrap", role: "region", tabindex: "0", "aria-label": label },
    h("table", { id }, h("thead", {}, head), h("tbody", {}, rows)));
}

function cell(col, value, numeric = false) {
  return h("td", { class: numeric ? "num" : null, dataset: { col } }, value);
}

function stageDetail(stage) {
  const parts = [];
  if (stage.reason) parts.push(stage.reason);
  for (const [key, value] of Object.entries(stage.detail || {})) parts.push(`${key}=${value}`);
  return parts.join("; ");
}

function fact(term, value, key) {
  return [h("dt", {}, term), h("dd", { dataset: key ? { fact: key } : null }, value)];
}

/** The fusion the server applied ("rrf", "weighted", "zscore"), and whether it was tuned. */
function fusionText(trace) {
  const method = known(`debug.fusion.${trace.fusion}`, trace.fusion);
  return trace.tuned_fusion && trace.tuned_fusion.status === "applied"
    ? t("debug.trace.fusionTuned", { method }) : method;
}

/** What the minimum score did: the server's threshold stage. */
function minScoreText(trace) {
  const stage = trace.threshold || {};
  if (stage.status !== "applied") return t("debug.trace.minScoreOff");
  const detail = stage.detail || {};
  const compared = known(`debug.trace.compared.${detail.compared_with}`, detail.compared_with);
  return t("debug.trace.minScoreValue",
    { min: detail.min_score, compared, dropped: detail.dropped ?? 0 });
}

/** The channel weights this page sent (the trace does not echo them). */
function weightsText(request) {
  const dense = request.dense_weight;
  const sparse = request.sparse_weight;
  if (dense === undefined && sparse === undefined) return t("debug.trace.weightsDefault");
  const value = (weight) => (weight === undefined ? t("debug.trace.weightDefault") : weight);
  return t("debug.trace.weightsValue", { dense: value(dense), sparse: value(sparse) });
}

/** Summary facts: request id, mode, fusion, min score, weights, counts, scope. */
function summary(trace, request) {
  const scope = trace.scope || {};
  const facts = [
    fact(t("debug.trace.request"), h("span", { class: "mono" }, trace.request_id), "request"),
    fact(t("debug.trace.query"), trace.query, "query"),
    fact(t("debug.trace.mode"), known(`debug.mode.${trace.mode}`, trace.mode), "mode"),
    fact(t("debug.trace.fusion"), fusionText(trace), "fusion"),
    fact(t("debug.trace.minScore"), minScoreText(trace), "min_score"),
  ];
  if (request) facts.push(fact(t("debug.trace.weights"), weightsText(request), "weights"));
  if (trace.kb_version !== null && trace.kb_version !== undefined) {
    facts.push(fact(t("debug.trace.kbVersion"), int(trace.kb_version), "kb_version"));
  }
  facts.push(
    fact(t("debug.trace.fused"), int(trace.fused_count), "fused"),
    fact(t("debug.trace.dropped"), int(trace.ready_filtered_count), "dropped"),
    fact(t("debug.trace.returned"), int(trace.returned_count), "returned"),
  );
  if (scope.document_ids_requested) {
    facts.push(fact(t("debug.trace.documents"), t("debug.trace.documentsValue", {
      requested: scope.document_ids_requested, allowed: scope.document_ids_allowed ?? "?",
    }), "documents"));
  }
  if (scope.empty_reason) facts.push(fact(t("debug.trace.scope"), scope.empty_reason, "scope"));
  const body = request ? h("details", { class: "small request-body" },
    h("summary", {}, t("debug.trace.requestBody")),
    h("pre", { class: "mono" }, JSON.stringify(request, null, 2))) : null;
  return h("section", { class: "card", id: "trace-summary" },
    h("h2", {}, t("debug.trace.title")), h("dl", { class: "facts" }, facts), body);
}

function variants(trace) {
  return h("section", { class: "card", id: "trace-variants" },
    h("h3", {}, t("debug.variants.title")),
    h("ol", {}, (trace.variants || []).map((v) =>
      h("li", { dataset: { method: v.method } },
        h("span", { class: "badge" }, METHODS.has(v.method) ? t(`debug.method.${v.method}`)
          : v.method), " ", v.text))));
}

function stages(trace) {
  const requested = trace.switches_requested || {};
  const applied = trace.switches_applied || {};
  const dash = t("debug.stage.notSwitch");
  const rows = SWITCHES.map(([key, label]) => {
    const stage = trace[key] || { status: "off" };
    return h("tr", { dataset: { stage: key } },
      cell("stage", t(label)),
      cell("requested", t(requested[key] ? "debug.stage.on" : "debug.stage.off")),
      cell("applied", t(applied[key] ? "debug.stage.yes" : "debug.stage.no")),
      cell("status", badge(stage.status)), cell("detail", stageDetail(stage)));
  });
  for (const [key, label] of OTHER_STAGES) {
    const stage = trace[key] || { status: "off" };
    rows.push(h("tr", { dataset: { stage: key } }, cell("stage", t(label)),
      cell("requested", dash), cell("applied", dash), cell("status", badge(stage.status)),
      cell("detail", stageDetail(stage))));
  }
  return h("section", { class: "card", id: "trace-stages" },
    h("h3", {}, t("debug.stages.title")),
    table("stages-table", t("debug.stages.region"), [[t("debug.stages.stage")],
      [t("debug.stages.requested")], [t("debug.stages.applied")], [t("debug.stages.status")],
      [t("debug.stages.detail"), false, "detail"]], rows));
}

/** Candidates per channel (summed over variants) and per list. */
export function channelTotals(trace) {
  const totals = {};
  for (const run of trace.channels || []) {
    totals[run.channel] = (totals[run.channel] || 0) + run.candidates;
  }
  return totals;
}

function channels(trace) {
  const totals = channelTotals(trace);
  const rows = (trace.channels || []).map((run) =>
    h("tr", { dataset: { list: run.list_name }, class: run.error ? "failed" : null },
      cell("list", run.list_name), cell("channel", run.channel), cell("variant", run.variant),
      cell("candidates", int(run.candidates), true), cell("latency", num(run.latency_ms, 1), true),
      cell("error", run.error || "")));
  return h("section", { class: "card", id: "trace-channels" },
    h("h3", {}, t("debug.channels.title")),
    h("p", { class: "small", id: "channel-totals" },
      Object.keys(totals).length
        ? Object.entries(totals).map(([channel, count]) =>
          h("span", { class: "badge", dataset: { channel, candidates: count } },
            t("debug.channels.total", { channel, count }))).flatMap((node) => [node, " "])
        : t("debug.channels.none")),
    table("channels-table", t("debug.channels.region"), [[t("debug.channels.list")],
      [t("debug.channels.channel")], [t("debug.channels.variant"), false, "variant"],
      [t("debug.channels.candidates"), true], [t("debug.channels.ms"), true],
      [t("debug.channels.error")]], rows));
}

function degradations(trace) {
  const list = trace.degradations || [];
  return h("section", { class: "card", id: "trace-degradations" },
    h("h3", {}, t("debug.degradations.title", { count: list.length })),
    list.length
      ? h("ul", { class: "degradations" }, list.map((d) =>
        h("li", { dataset: { code: d.code } }, h("strong", {}, d.code), ": ", d.reason)))
      : h("p", { class: "muted small" }, t("debug.degradations.none")));
}

function timings(trace) {
  const entries = Object.entries(trace.timings_ms || {});
  const longest = Math.max(1, ...entries.map(([, ms]) => ms));
  const rows = entries.map(([stage, ms]) => {
    const bar = h("span", { class: "timing-bar" });
    bar.style.width = `${Math.max(2, Math.round((ms / longest) * 80))}px`;
    return h("tr", { dataset: { stage } }, cell("stage", stage), cell("ms", num(ms, 1), true),
      h("td", {}, bar));
  });
  return h("section", { class: "card", id: "trace-timings" },
    h("h3", {}, t("debug.timings.title")),
    table("timings-table", t("debug.timings.region"), [[t("debug.timings.stage")],
      [t("debug.timings.ms"), true], [t("debug.timings.bar")]], rows));
}

/** The score the hit was finally ordered by: rerank when it ran, else fusion. */
export function finalScore(hit) {
  return hit.rerank_score ?? hit.fusion_score;
}

/** A channel's cell: its score over its rank in that channel's list ("–" when not found). */
function channelCell(col, score, rank) {
  const found = score !== null && score !== undefined;
  return h("td", {
    class: "num score-pair", dataset: { col, score: found ? num(score) : "", rank: int(rank) },
    title: found ? t("debug.hits.channelTitle", { score: num(score), rank: int(rank) }) : null,
  }, found ? [h("span", { class: "score" }, num(score)),
    h("span", { class: "rank" }, t("debug.hits.rank", { rank: int(rank) }))] : "–");
}

/** The lists that found the hit: "dense:original, sparse:original", one a line where the
 * column is narrow (the cell breaks at the spaces only). */
function sourcesCell(sources) {
  const text = sources.join(", ");
  return h("td", { dataset: { col: "sources" }, title: text || null }, text);
}

function detailRow(hit, id, columns) {
  const path = (hit.heading_path || []).join(" › ");
  const location = locatorFull(hit.locator);
  const facts = [
    fact(t("debug.hits.file"), hit.filename, "file"),
    fact(t("debug.hits.section"), path || "–", "section"),
    fact(t("debug.hits.locator"), location || "–", "locator"),
    fact(t("debug.hits.documentId"), h("span", { class: "mono" }, hit.document_id), "document"),
    fact(t("debug.hits.chunkId"), h("span", { class: "mono" }, hit.chunk_id), "chunk"),
    fact(t("debug.hits.sources"), (hit.retrieval_sources || []).join(", ") || "–", "sources"),
  ];
  if (hit.second_dense_score !== null && hit.second_dense_score !== undefined) {
    facts.push(fact(t("debug.hits.secondDense"), t("debug.hits.channelTitle",
      { score: num(hit.second_dense_score), rank: int(hit.second_dense_rank) }), "second-dense"));
  }
  if ((hit.merged_from || []).length) {
    facts.push(fact(t("debug.hits.mergedFrom"),
      h("span", { class: "mono" }, hit.merged_from.join(", ")), "merged"));
  }
  const context = hit.context_text && hit.context_text !== hit.text
    ? [h("h4", {}, t("debug.hits.context")), h("p", { class: "hit-full" }, hit.context_text)]
    : null;
  return h("tr", { class: "hit-detail", id, dataset: { detailFor: hit.chunk_id }, hidden: true },
    h("td", { colspan: String(columns) },
      h("dl", { class: "facts" }, facts),
      h("h4", {}, t("debug.hits.fullText")), h("p", { class: "hit-full" }, hit.text),
      context));
}

// [catalogue key of the header, numeric, data-col of the header (sets its width)]
const HIT_HEADERS = [
  ["debug.hits.details", false, "toggle"], ["debug.hits.rankHeader", true, "rank"],
  ["debug.hits.file", false, "file"], ["debug.hits.section", false, "section"],
  ["debug.hits.locator", false, "locator"], ["debug.hits.text", false, "text"],
  ["debug.hits.dense", true, "dense"], ["debug.hits.sparse", true, "sparse"],
  ["debug.hits.fused", true, "fused"], ["debug.hits.rerank", true, "rerank"],
  ["debug.hits.final", true, "final"], ["debug.hits.sources", false, "sources"],
];

/** The per-stage score table: per hit a row (data-chunk-id, cells data-col) and a hidden
 * detail row (data-detail-for) that the row's first button shows. */
export function hitsTable(hits, idPrefix = "hit") {
  const rows = hits.flatMap((hit, index) => {
    const detailId = `${idPrefix}-detail-${index + 1}`;
    const path = (hit.heading_path || []).join(" › ");
    const where = locatorShort(hit.locator);
    const toggle = h("button", {
      type: "button", class: "hit-toggle", "aria-expanded": "false", "aria-controls": detailId,
      "aria-label": t("debug.hits.showDetail", { rank: hit.rank }),
      title: t("debug.hits.showDetail", { rank: hit.rank }),
    }, "▸");
    const row = h("tr", { dataset: { chunkId: hit.chunk_id, documentId: hit.document_id } },
      h("td", { class: "toggle" }, toggle),
      cell("rank", int(hit.rank), true),
      h("td", { dataset: { col: "file" }, title: hit.filename },
        h("span", { class: "clamp-2" }, hit.filename)),
      h("td", { dataset: { col: "section" }, title: path || null },
        h("span", { class: "truncate" }, path || "–")),
      h("td", { dataset: { col: "locator" }, title: locatorFull(hit.locator) || null },
        h("span", { class: "truncate" }, where || "–")),
      h("td", { class: "hit-text", dataset: { col: "text" } },
        h("div", { class: "clamp", title: hit.text }, hit.text)),
      channelCell("dense", hit.dense_score, hit.dense_rank),
      channelCell("sparse", hit.sparse_score, hit.sparse_rank),
      cell("fused", num(hit.fusion_score), true),
      cell("rerank", num(hit.rerank_score), true),
      h("td", { class: "num final", dataset: { col: "final" } }, num(finalScore(hit))),
      sourcesCell(hit.retrieval_sources || []));
    const detail = detailRow(hit, detailId, HIT_HEADERS.length);
    toggle.addEventListener("click", () => {
      const open = detail.hidden;
      detail.hidden = !open;
      toggle.setAttribute("aria-expanded", String(open));
      toggle.setAttribute("aria-label", t(open ? "debug.hits.hideDetail" : "debug.hits.showDetail",
        { rank: hit.rank }));
      toggle.title = toggle.getAttribute("aria-label");
      toggle.textContent = open ? "▾" : "▸";
      row.classList.toggle("open", open);
    });
    return [row, detail];
  });
  const wrap = table("hits-table", t("debug.hits.region"),
    HIT_HEADERS.map(([key, numeric, col]) => [t(key), numeric, col]), rows);
  // on phones each hit is a card whose cells show their header as a label (app.css)
  const labels = HIT_HEADERS.map(([key]) => t(key));
  for (const row of wrap.querySelectorAll("tr[data-chunk-id]")) {
    [...row.children].forEach((td, index) => { td.dataset.label = labels[index]; });
  }
  // the toggle column's header names the column for screen readers only
  const toggleHead = wrap.querySelector('th[data-col="toggle"]');
  toggleHead.replaceChildren(h("span", { class: "visually-hidden" }, t("debug.hits.details")));
  for (const [col, key] of [["dense", "debug.hits.denseTitle"], ["sparse", "debug.hits.sparseTitle"],
    ["final", "debug.hits.finalTitle"]]) {
    wrap.querySelector(`th[data-col="${col}"]`).title = t(key);
  }
  return wrap;
}

function faqTable(faq) {
  const rows = faq.map((hit) => h("tr", { dataset: { faqId: hit.faq_id } },
    cell("rank", int(hit.rank), true), cell("question", hit.question), cell("answer", hit.answer),
    cell("dense_score", num(hit.dense_score), true), cell("sparse_score", num(hit.sparse_score), true),
    cell("fused", num(hit.fusion_score), true),
    cell("direct", hit.direct_answer ? t("debug.faq.direct") : "")));
  return table("faq-table", t("debug.faq.region"), [[t("debug.hits.rankHeader"), true],
    [t("debug.faq.question")], [t("debug.faq.answer")], [t("debug.faq.dense"), true],
    [t("debug.faq.sparse"), true], [t("debug.faq.fused"), true], [t("debug.faq.directHeader")]],
  rows);
}

/** Every trace section; `hits` (null: no hits section) and `faq` are the explained results,
 * `request` the body this page sent (shown with the trace: the weights are not echoed). */
export function traceSections(trace, hits = null, faq = [], { request = null } = {}) {
  const hitsCard = hits === null ? null : h("section", { class: "card", id: "hits" },
    h("h2", { id: "hits-title" }, t("debug.hits.title", { count: hits.length })),
    hits.length ? hitsTable(hits) : h("p", { class: "muted" }, t("debug.hits.none")));
  const sections = [
    ...(hitsCard ? [hitsCard] : []),
    summary(trace, request),
    h("div", { class: "trace-grid" }, channels(trace), degradations(trace), timings(trace)),
    h("div", { class: "trace-grid" }, variants(trace), stages(trace)),
  ];
  if (faq.length) {
    sections.push(h("section", { class: "card", id: "faq-hits" },
      h("h2", {}, t("debug.faq.title", { count: faq.length })), faqTable(faq)));
  }
  return sections;
}
