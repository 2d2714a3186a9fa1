// The evidence cards under a chat answer: one per piece of evidence of the turn, the cited ones
// marked. Each card opens the evidence panel and shows an absolute relevance (issue 38: a
// min-max scale over the turn showed a cited source as "0%"): the server's calibrated
// `relevance` (0..1) when the hit carries one, else the dense cosine similarity of question and
// passage; no bar without either (raw fusion scores are not shown as percents: z-score fusion
// gives -1.4978). In a detail, the raw score of every stage (dense, sparse, fusion, rerank,
// final), as the debug page's table shows them.
import { h, locatorKinds, num } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/chat.js";

const STAGES = ["dense", "sparse", "fusion", "rerank"];
const finite = (value) => typeof value === "number" && Number.isFinite(value);

/** The score an item was ordered by: rerank when it ran, else fusion (older turns: `score`). */
export function finalScore(item) {
  if (finite(item.rerank_score)) return item.rerank_score;
  if (finite(item.fusion_score)) return item.fusion_score;
  return finite(item.score) ? item.score : null;
}

/** What an item's relevance is read from: "calibrated" (the server's `relevance`), "dense"
 * (the cosine similarity), or null when it has neither. */
export function relevanceSource(item) {
  if (finite(item.relevance)) return "calibrated";
  if (finite(item.dense_score)) return "dense";
  return null;
}

/**
 * Each item's display relevance in whole percent, by evidence number: absolute, the same
 * passage shows the same percent whatever else the answer found (the calibrated relevance,
 * else the dense cosine, clamped to 0..1; a positive one never rounds to 0). Null without one.
 */
export function relevance(evidence) {
  const out = new Map();
  for (const item of evidence) {
    const source = relevanceSource(item);
    const value = source === "calibrated" ? item.relevance
      : source === "dense" ? item.dense_score : null;
    if (value === null) {
      out.set(item.n, null);
    } else {
      const clamped = Math.min(1, Math.max(0, value));
      out.set(item.n, clamped > 0 ? Math.max(1, Math.round(clamped * 100)) : 0);
    }
  }
  return out;
}

function where(item) {
  return locatorKinds(item.locator, item.heading_path)
    .map(([kind, value]) => t(`chat.loc.${kind}`, { value })).join(" · ");
}

function scoreDetail(item) {
  const rows = [...STAGES.map((stage) => [stage, item[`${stage}_score`]]),
    ["final", finalScore(item)]];
  return h("details", { class: "evidence-scores", dataset: { evidence: item.n } },
    h("summary", { "aria-label": t("chat.card.scores.label", { n: item.n }) },
      t("chat.card.scores")),
    h("dl", { class: "score-list" }, rows.map(([stage, value]) => [
      h("dt", {}, t(`chat.score.${stage}`)),
      h("dd", { class: "num", dataset: { score: stage } },
        finite(value) ? num(value) : t("chat.score.none")),
    ])));
}

function meter(percent) {
  const bar = h("span", { class: "relevance-fill" });
  bar.style.width = `${percent}%`; // CSSOM: the CSP refuses style attributes
  return h("span", { class: "relevance-bar", "aria-hidden": "true" }, bar);
}

/** The cards of `evidence`; `cited` is the set of numbers the answer cites. */
export function evidenceCards(evidence, cited, onOpen) {
  const percents = relevance(evidence);
  return h("div", { class: "evidence-cards", role: "group", "aria-label": t("chat.cards") },
    evidence.map((item) => {
      const place = where(item);
      const pictures = (item.assets || []).length;
      const percent = percents.get(item.n);
      const card = h("button", {
        type: "button",
        class: cited.has(item.n) ? "evidence-card cited" : "evidence-card",
        dataset: { evidence: item.n, chunkId: item.chunk_id },
        onclick: (event) => onOpen(item, event.currentTarget),
      },
      h("strong", { class: "card-title" }, t("chat.card.title", { n: item.n, filename: item.filename })),
      place ? h("span", { class: "where" }, place) : null,
      h("span", { class: "clamp" }, item.text),
      pictures ? h("span", { class: "where" }, pictures === 1 ? t("chat.card.images.one")
        : t("chat.card.images.other", { count: pictures })) : null,
      percent === null ? null : h("span", {
        class: "relevance", title: t(`chat.card.relevanceHint.${relevanceSource(item)}`),
        dataset: { relevance: percent, relevanceSource: relevanceSource(item) },
      }, meter(percent), t("chat.card.relevance", { percent })));
      return h("div", { class: "evidence-item", dataset: { evidence: item.n } },
        card, scoreDetail(item));
    }));
}
