// Rendering a RetrievalTrace (and the hits it explains) as tables; shared by both pages.
import { h, int, num } from "./dom.js";

const SWITCHES = [
  ["rewrite", "rewrite"],
  ["rerank", "rerank"],
  ["small2big", "Small2Big"],
  ["auto_merge", "auto-merge"],
];
const OTHER_STAGES = [["threshold", "min score"], ["faq", "FAQ"]];

function badge(status) {
  return h("span", { class: `badge status-${status}` }, status);
}

function table(id, headers, rows) {
  const head = h("tr", {}, headers.map(([label, numeric]) =>
    h("th", { scope: "col", class: numeric ? "num" : null }, label)));
  return h("div", { class: "table-wrap" },
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

/** Summary facts: request id, mode, fusion, counts, scope. */
function summary(trace) {
  const scope = trace.scope || {};
  const facts = [
    ["Request", h("span", { class: "mono" }, trace.request_id)],
    ["Query", trace.query],
    ["Mode", `${trace.mode} · fusion ${trace.fusion}`],
    ["Fused candidates", int(trace.fused_count)],
    ["Dropped (not READY)", int(trace.ready_filtered_count)],
    ["Returned", int(trace.returned_count)],
  ];
  if (scope.document_ids_requested) {
    facts.push(["Documents", `${scope.document_ids_requested} requested, `
      + `${scope.document_ids_allowed ?? "?"} READY`]);
  }
  if (scope.empty_reason) facts.push(["Scope", scope.empty_reason]);
  return h("section", { class: "card", id: "trace-summary" },
    h("h2", {}, "Trace"),
    h("dl", { class: "facts" }, facts.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])));
}

function variants(trace) {
  return h("section", { class: "card", id: "trace-variants" },
    h("h3", {}, "Query variants"),
    h("ol", {}, (trace.variants || []).map((v) =>
      h("li", { dataset: { method: v.method } }, h("span", { class: "badge" }, v.method), " ", v.text))));
}

function stages(trace) {
  const requested = trace.switches_requested || {};
  const applied = trace.switches_applied || {};
  const rows = SWITCHES.map(([key, label]) => {
    const stage = trace[key] || { status: "off" };
    return h("tr", { dataset: { stage: key } },
      cell("stage", label), cell("requested", requested[key] ? "on" : "off"),
      cell("applied", applied[key] ? "yes" : "no"), cell("status", badge(stage.status)),
      cell("detail", stageDetail(stage)));
  });
  for (const [key, label] of OTHER_STAGES) {
    const stage = trace[key] || { status: "off" };
    rows.push(h("tr", { dataset: { stage: key } }, cell("stage", label), cell("requested", "–"),
      cell("applied", "–"), cell("status", badge(stage.status)), cell("detail", stageDetail(stage))));
  }
  return h("section", { class: "card", id: "trace-stages" },
    h("h3", {}, "Stages"),
    table("stages-table", [["stage"], ["requested"], ["applied"], ["status"], ["why / detail"]], rows));
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
    h("h3", {}, "Candidates per channel"),
    h("p", { class: "small", id: "channel-totals" },
      Object.keys(totals).length
        ? Object.entries(totals).map(([channel, count]) =>
          h("span", { class: "badge", dataset: { channel, candidates: count } },
            `${channel}: ${count}`)).flatMap((node) => [node, " "])
        : "no channel ran"),
    table("channels-table", [["list"], ["channel"], ["variant"], ["candidates", true],
      ["ms", true], ["error"]], rows));
}

function degradations(trace) {
  const list = trace.degradations || [];
  return h("section", { class: "card", id: "trace-degradations" },
    h("h3", {}, `Degradations (${list.length})`),
    list.length
      ? h("ul", { class: "degradations" }, list.map((d) =>
        h("li", { dataset: { code: d.code } }, h("strong", {}, d.code), ": ", d.reason)))
      : h("p", { class: "muted small" }, "none: every requested stage ran"));
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
    h("h3", {}, "Stage timings"),
    table("timings-table", [["stage"], ["ms", true], [""]], rows));
}

/** The score the hit was finally ordered by: rerank when it ran, else fusion. */
export function finalScore(hit) {
  return hit.rerank_score ?? hit.fusion_score;
}

/** The per-stage score table, one row per hit (data-chunk-id, cells data-col). */
export function hitsTable(hits) {
  const rows = hits.map((hit) => {
    const text = h("div", { class: "clamp", title: hit.text }, hit.text);
    const extra = hit.context_text && hit.context_text !== hit.text
      ? h("details", { class: "small" }, h("summary", {}, "Small2Big context"), hit.context_text)
      : null;
    return h("tr", { dataset: { chunkId: hit.chunk_id, documentId: hit.document_id } },
      cell("rank", int(hit.rank), true),
      cell("file", hit.filename),
      cell("section", (hit.heading_path || []).join(" › ")),
      h("td", { class: "hit-text", dataset: { col: "text" } }, text, extra),
      cell("dense_rank", int(hit.dense_rank), true),
      cell("dense_score", num(hit.dense_score), true),
      cell("sparse_rank", int(hit.sparse_rank), true),
      cell("sparse_score", num(hit.sparse_score), true),
      cell("fused", num(hit.fusion_score), true),
      cell("rerank", num(hit.rerank_score), true),
      cell("final", num(finalScore(hit)), true),
      cell("sources", (hit.retrieval_sources || []).join(", ")));
  });
  return table("hits-table", [["#", true], ["file"], ["section"], ["text"], ["dense rank", true],
    ["dense score", true], ["sparse rank", true], ["sparse score", true], ["fused", true],
    ["rerank", true], ["final", true], ["lists"]], rows);
}

function faqTable(faq) {
  const rows = faq.map((hit) => h("tr", { dataset: { faqId: hit.faq_id } },
    cell("rank", int(hit.rank), true), cell("question", hit.question), cell("answer", hit.answer),
    cell("dense_score", num(hit.dense_score), true), cell("sparse_score", num(hit.sparse_score), true),
    cell("fused", num(hit.fusion_score), true),
    cell("direct", hit.direct_answer ? "direct answer" : "")));
  return table("faq-table", [["#", true], ["question"], ["answer"], ["dense", true],
    ["sparse", true], ["fused", true], [""]], rows);
}

/** Every trace section; `hits` (null: no hits section) and `faq` are the explained results. */
export function traceSections(trace, hits = null, faq = []) {
  const hitsCard = hits === null ? null : h("section", { class: "card", id: "hits" },
    h("h2", {}, `Hits (${hits.length})`),
    hits.length ? hitsTable(hits) : h("p", { class: "muted" }, "no document chunk matched"));
  const sections = [
    summary(trace),
    ...(hitsCard ? [hitsCard] : []),
    h("div", { class: "trace-grid" }, channels(trace), degradations(trace), timings(trace)),
    h("div", { class: "trace-grid" }, variants(trace), stages(trace)),
  ];
  if (faq.length) {
    sections.push(h("section", { class: "card", id: "faq-hits" },
      h("h2", {}, `FAQ (${faq.length})`), faqTable(faq)));
  }
  return sections;
}
