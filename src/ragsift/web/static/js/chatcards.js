// The evidence cards under a chat answer: one per piece of evidence of the turn, the cited ones
// marked. Each card opens the evidence panel and shows a relevance the reader can compare
// (the final score min-max normalised over the turn's evidence into 0-100%: raw fusion scores
// can be negative, z-score fusion gives -1.4978) and, in a detail, the raw score of every stage
// (dense, sparse, fusion, rerank, final), as the debug page's table shows them.
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

/**
 * Each item's display relevance in whole percent, by evidence number: its final score
 * min-max normalised over `evidence` (all equal, or one item: 100). Null without a score.
 */
export function relevance(evidence) {
  const scores = evidence.map(finalScore).filter(finite);
  const low = Math.min(...scores);
  const high = Math.max(...scores);
  const out = new Map();
  for (const item of evidence) {
    const score = finalScore(item);
    if (!finite(score)) out.set(item.n, null);
    else out.set(item.n, high > low ? Math.round(((score - low) / (high - low)) * 100) : 100);
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
        class: "relevance", title: t("chat.card.relevanceHint"),
        dataset: { relevance: percent },
      }, meter(percent), t("chat.card.relevance", { percent })));
      return h("div", { class: "evidence-item", dataset: { evidence: item.n } },
        card, scoreDetail(item));
    }));
}
