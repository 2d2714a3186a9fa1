// Retrieval testing (issue 38): compare two rankings of one query, configuration A and B.
//
// rankMoves is pure (no DOM): tests import it in the browser and check it on made-up lists.
// compareColumns draws the two ranked columns: each hit with its per-stage scores, and in B
// its move against A (up / down / same / new); A's hits that B lost are marked dropped.
import { h, num } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/debug.js";
import { finalScore } from "./trace.js";

/**
 * The moves between two rankings of chunk ids (rank 1 first).
 * Returns {a: [{chunkId, rank, otherRank, move}], b: [...same...], dropped: [{chunkId, rank}]}:
 * in `b`, move is "up" / "down" (by = ranks moved) / "same" / "new" (not in A); in `a`, move
 * is "kept" or "dropped" (not in B). A chunk id repeated within one list counts at its first
 * rank only.
 */
export function rankMoves(aIds, bIds) {
  const ranks = (ids) => {
    const found = new Map();
    ids.forEach((id, index) => { if (!found.has(id)) found.set(id, index + 1); });
    return found;
  };
  const inA = ranks(aIds);
  const inB = ranks(bIds);
  const b = [...inB].map(([chunkId, rank]) => {
    const before = inA.get(chunkId) ?? null;
    if (before === null) return { chunkId, rank, otherRank: null, move: "new", by: 0 };
    const by = before - rank;
    return { chunkId, rank, otherRank: before, by: Math.abs(by),
      move: by > 0 ? "up" : by < 0 ? "down" : "same" };
  });
  const a = [...inA].map(([chunkId, rank]) => {
    const after = inB.get(chunkId) ?? null;
    return { chunkId, rank, otherRank: after, move: after === null ? "dropped" : "kept", by: 0 };
  });
  const dropped = a.filter((item) => item.move === "dropped")
    .map(({ chunkId, rank }) => ({ chunkId, rank }));
  return { a, b, dropped };
}

const MOVE_KEYS = {
  up: "debug.compare.moveUp", down: "debug.compare.moveDown", same: "debug.compare.moveSame",
  new: "debug.compare.moveNew", dropped: "debug.compare.moveDropped", kept: null,
};

function moveBadge(item) {
  const key = MOVE_KEYS[item.move];
  if (!key) return null;
  return h("span", { class: `badge move move-${item.move}`, dataset: { move: item.move } },
    t(key, { by: item.by, rank: item.otherRank ?? "" }));
}

/** One stage's score, "–" when the stage did not score the hit. */
function stage(key, value) {
  return h("span", { class: "stage-score", dataset: { stage: key } },
    t(`debug.compare.stage.${key}`, { score: num(value) }));
}

function hitItem(hit, item) {
  return h("li", { class: `compare-hit move-${item.move}`,
    dataset: { chunkId: hit.chunk_id, rank: String(item.rank), move: item.move } },
  h("div", { class: "compare-hit-head" },
    h("span", { class: "compare-rank" }, t("debug.hits.rank", { rank: item.rank })), " ",
    h("span", { class: "compare-file" }, hit.filename || ""), " ", moveBadge(item)),
  h("p", { class: "compare-text small" }, (hit.text || "").slice(0, 160)),
  h("p", { class: "compare-scores small muted" },
    stage("dense", hit.dense_score), " · ", stage("sparse", hit.sparse_score), " · ",
    stage("fused", hit.fusion_score), " · ", stage("rerank", hit.rerank_score), " · ",
    stage("final", finalScore(hit))));
}

/** A column of ranked hits: its title, its configuration line, the list. */
function column(side, title, summary, hits, items) {
  const byId = new Map(hits.map((hit) => [hit.chunk_id, hit]));
  const list = items.map((item) => hitItem(byId.get(item.chunkId), item));
  return h("section", { class: "compare-column", id: `compare-${side}`,
    "aria-labelledby": `compare-${side}-title` },
  h("h3", { id: `compare-${side}-title` }, title),
  h("p", { class: "small muted compare-config" }, summary),
  list.length ? h("ol", { class: "compare-list" }, ...list)
    : h("p", { class: "muted" }, t("debug.hits.none")));
}

/** The two columns for the answers `outA` and `outB` (explain responses). */
export function compareColumns(outA, outB, summaryA, summaryB) {
  const moves = rankMoves(outA.results.map((hit) => hit.chunk_id),
    outB.results.map((hit) => hit.chunk_id));
  const counts = { up: 0, down: 0, new: 0, same: 0 };
  for (const item of moves.b) counts[item.move] += 1;
  const line = t("debug.compare.summary", { ...counts, dropped: moves.dropped.length });
  return {
    moves,
    nodes: [
      h("p", { class: "small compare-moves", role: "status" }, line),
      h("div", { class: "compare-columns" },
        column("a", t("debug.compare.columnA"), summaryA, outA.results, moves.a),
        column("b", t("debug.compare.columnB"), summaryB, outB.results, moves.b)),
    ],
  };
}
