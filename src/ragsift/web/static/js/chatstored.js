// A stored conversation on the chat page, shown as it was answered: each turn with its
// evidence, answer, trace, feedback and status line; a regenerated turn's earlier versions
// (superseded) fold under the version shown.
import { h } from "./dom.js";
import { t } from "./i18n.js";

const FINISHED_STATUSES = new Set(["done", "complete", "completed", "answered", "ok"]);

/** Whether the plan answered the turn with a FAQ entry's own answer. */
export const isFaqDirect = (trace) => trace?.route?.route === "faq_direct";

/** The status line of a stored turn. */
function storedStatus(view, turn) {
  if (turn.status && !FINISHED_STATUSES.has(turn.status)) {
    const known = ["generating", "failed", "cancelled"].includes(turn.status);
    view.setStatus(known ? `chat.status.stored.${turn.status}` : "chat.status.stored.other",
      { status: turn.status }, turn.status === "failed" ? "error" : "stored");
  } else if (isFaqDirect(turn.trace)) {
    view.setStatus("chat.status.faq");
  } else if (turn.extractive && (turn.evidence || []).length) {
    view.setStatus("chat.status.extractive");
  }
}

/** The view of a stored turn (`makeView(question, ids)`), with its tools and feedback. */
function storedTurn(conversationId, turn, makeView) {
  const view = makeView(turn.question, () => ({ conversationId, turnId: turn.id }));
  view.element.dataset.turnId = turn.id;
  view.element.dataset.version = String(turn.version || 1);
  view.setEvidence(turn.evidence);
  view.setAnswer(turn.answer, turn.citations, turn.assets);
  view.setTrace(turn.trace);
  view.tools.setFeedback(turn.feedback);
  storedStatus(view, turn);
  return view;
}

function showVersions(view, turn, older) {
  const summary = h("summary", {});
  const label = () => {
    summary.textContent = t("chat.versions.summary", { version: turn.version, count: older.length });
  };
  label();
  view.onRelabel = label;
  view.versionSlot.replaceChildren(h("details", { class: "versions" }, summary,
    ...older.map((item) => item.element)));
}

/** The views of a conversation's current turns, in order, each with its earlier versions. */
export function storedTurns(conversation, makeView) {
  const earlier = new Map();
  for (const turn of conversation.turns.filter((item) => item.superseded)) {
    const root = turn.version_of || turn.id;
    earlier.set(root, [...(earlier.get(root) || []), turn]);
  }
  const views = [];
  for (const turn of conversation.turns.filter((item) => !item.superseded)) {
    const view = storedTurn(conversation.id, turn, makeView);
    views.push(view);
    const older = earlier.get(turn.version_of || turn.id) || [];
    if (older.length) {
      showVersions(view, turn, older.map((o) => storedTurn(conversation.id, o, makeView)));
    }
  }
  return views;
}
