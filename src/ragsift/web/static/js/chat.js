// The chat page: conversations, a streamed answer (POST /api/chat/stream read as SSE through
// fetch, so it carries the API key header like every other call: EventSource could not send
// it), evidence cards and citation links that open the evidence side panel.
import { api, describe, errorFrom, request } from "./api.js";
import { initKeyControl } from "./auth.js";
import { h, say } from "./dom.js";
import { ConversationList } from "./conversations.js";
import { EvidencePanel } from "./evidence.js";
import { readEvents } from "./sse.js";
import { TurnView } from "./turn.js";

const $ = (id) => document.getElementById(id);
const FINISHED_STATUSES = new Set(["done", "complete", "completed", "answered", "ok"]);

const kbSelect = $("kb");
const thread = $("thread");
const input = $("message");
const side = $("chat-side");
const panel = new EvidencePanel($("evidence-panel"));
const views = new WeakMap(); // article.turn -> TurnView
const state = { conversationId: null, kbId: null, streaming: null };

const conversations = new ConversationList({
  list: $("conversation-list"),
  notice: $("side-notice"),
  onOpen: (id) => openConversation(id),
  onDeleted: (id, items) => {
    if (id !== state.conversationId) return;
    if (items.length) openConversation(items[0].id);
    else newChat();
  },
});

function openEvidence(item, opener) {
  panel.open(item, opener);
}

function notice(message) {
  $("composer-notice").textContent = message || "";
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
  document.body.dataset.streaming = busy ? "true" : "false";
}

function setUrl(id) {
  const url = new URL(location.href);
  if (id) url.searchParams.set("c", id);
  else url.searchParams.delete("c");
  history.replaceState(null, "", url);
}

function lockKb(kbId) {
  if (kbId && ![...kbSelect.options].some((o) => o.value === kbId)) {
    kbSelect.append(h("option", { value: kbId }, `(knowledge base ${kbId})`));
  }
  if (kbId) kbSelect.value = kbId;
  kbSelect.disabled = Boolean(kbId);
}

function emptyHint() {
  return h("p", { class: "empty-thread", id: "empty-thread" },
    "Ask a question about the knowledge base. The conversation is saved with your first message.");
}

/** Replace the thread's content; the turns removed give their images back first. */
function clearThread(...nodes) {
  for (const element of thread.querySelectorAll("article.turn")) views.get(element)?.dispose();
  thread.replaceChildren(...nodes);
}

function addTurn(question) {
  const view = new TurnView(question, openEvidence);
  views.set(view.element, view);
  $("empty-thread")?.remove();
  thread.append(view.element);
  view.element.scrollIntoView({ block: "end" });
  return view;
}

function stopStreaming() {
  state.streaming?.controller.abort();
}

function closeSideOnNarrow() {
  side.classList.remove("open");
  $("side-toggle").setAttribute("aria-expanded", "false");
}

/** Start a draft: nothing exists server-side until its first message is sent. */
function newChat() {
  stopStreaming();
  panel.close();
  state.conversationId = null;
  state.kbId = null;
  kbSelect.disabled = false;
  clearThread(emptyHint());
  conversations.setCurrent(null);
  setUrl(null);
  closeSideOnNarrow();
  input.focus();
}

/** Show a stored conversation as it was answered (its turns carry their evidence and trace). */
async function openConversation(id) {
  stopStreaming();
  panel.close();
  let conversation;
  try {
    conversation = await api(`/api/conversations/${encodeURIComponent(id)}`);
  } catch (error) {
    say($("side-notice"), `Could not open the conversation: ${describe(error)}`);
    if (error.status === 404) await conversations.refresh();
    return;
  }
  say($("side-notice"), "");
  state.conversationId = conversation.id;
  state.kbId = conversation.kb_id;
  lockKb(conversation.kb_id);
  clearThread();
  for (const turn of conversation.turns) {
    const view = addTurn(turn.question);
    view.setEvidence(turn.evidence);
    view.setAnswer(turn.answer, turn.citations, turn.assets);
    view.setTrace(turn.trace);
    if (turn.status && !FINISHED_STATUSES.has(turn.status)) {
      view.setStatus(`This turn is ${turn.status}.`, turn.status === "failed" ? "error" : "stored");
    } else if (turn.extractive) {
      view.setStatus("Extractive answer: sentences quoted from the evidence, no model wrote it.");
    }
  }
  if (!conversation.turns.length) thread.append(emptyHint());
  conversations.setCurrent(conversation.id);
  setUrl(conversation.id);
  closeSideOnNarrow();
}

function onTrace(view, data, kbId) {
  if (!state.conversationId) { // the draft now exists on the server
    state.conversationId = data.conversation_id;
    state.kbId = kbId;
    lockKb(kbId);
    setUrl(data.conversation_id);
    conversations.setCurrent(data.conversation_id);
    conversations.refresh();
  }
  view.element.dataset.turnId = data.turn_id;
  view.setEvidence(data.evidence);
  view.setTrace(data.trace);
  view.setStatus("Writing the answer…");
}

async function send(event) {
  event.preventDefault();
  if (state.streaming) return;
  const message = input.value.trim();
  const kbId = state.conversationId ? state.kbId : kbSelect.value;
  if (!message) return notice("Type a question first.");
  if (!kbId) return notice("Choose a knowledge base first.");
  notice("");
  input.value = "";
  const view = addTurn(message);
  view.setStatus("Searching the knowledge base…");
  const controller = new AbortController();
  state.streaming = { controller, view };
  setBusy(true);
  const body = { conversation_id: state.conversationId, kb_id: kbId, message };
  if ($("mode").value) body.mode = $("mode").value;
  let finished = false;
  try {
    const response = await request("/api/chat/stream", {
      method: "POST", signal: controller.signal, body: JSON.stringify(body),
      headers: { "content-type": "application/json", accept: "text/event-stream" },
    });
    if (!response.ok) throw await errorFrom(response);
    for await (const { event: name, data } of readEvents(response)) {
      if (name === "trace") onTrace(view, data, kbId);
      else if (name === "delta") view.appendDelta(data.text);
      else if (name === "citations") view.setAnswer(data.answer, data.citations, data.assets);
      else if (name === "error") {
        finished = true;
        view.flush();
        view.setStatus(`The answer failed: ${data.message} (${data.code})`, "error");
      } else if (name === "done") {
        finished = true;
        view.element.dataset.done = "true";
        view.setStatus(data.extractive
          ? "Extractive answer: sentences quoted from the evidence, no model wrote it." : "");
      }
    }
    if (!finished) view.setStatus("The answer stream ended before it was complete.", "error");
  } catch (error) {
    view.flush();
    if (error.name === "AbortError") view.setStatus("Stopped.", "stopped");
    else view.setStatus(describe(error), "error");
  } finally {
    state.streaming = null;
    setBusy(false);
    conversations.refresh();
  }
}

async function loadKbs() {
  try {
    const kbs = await api("/api/kbs");
    kbSelect.replaceChildren(...kbs.map((kb) => h("option", { value: kb.id }, kb.name)));
    if (!kbs.length) notice("No knowledge base yet: create one and upload documents on the debug page.");
    else if ($("composer-notice").textContent.startsWith("Could not list")) notice("");
  } catch (error) {
    notice(`Could not list knowledge bases: ${describe(error)}`);
  }
}

thread.addEventListener("click", (event) => {
  const link = event.target.closest("a.citation");
  if (!link) return;
  event.preventDefault();
  const view = views.get(link.closest("article.turn"));
  const item = view?.item(Number(link.dataset.citation));
  if (item) openEvidence(item, link);
  else notice(`Evidence ${link.dataset.citation} is not available.`);
});
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
});
$("composer").addEventListener("submit", send);
$("stop").addEventListener("click", stopStreaming);
$("new-chat").addEventListener("click", newChat);
$("side-toggle").addEventListener("click", () => {
  const open = side.classList.toggle("open");
  $("side-toggle").setAttribute("aria-expanded", String(open));
});

initKeyControl($("key-control"), {
  onKeyEntered: () => Promise.all([loadKbs(), conversations.refresh()]),
});

async function start() {
  await Promise.all([loadKbs(), conversations.refresh()]);
  const wanted = new URLSearchParams(location.search).get("c");
  if (wanted) await openConversation(wanted);
  document.body.dataset.ready = "true";
}
start();
