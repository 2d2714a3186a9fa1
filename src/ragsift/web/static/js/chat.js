// The chat page: conversations, a streamed answer (POST /api/chat/stream read as SSE through
// fetch, so it carries the API key header like every other call: EventSource could not send
// it), evidence cards and citation links that open the evidence side panel, and the search
// options under the composer (chatoptions.js: mode, rewrite / rerank / Small2Big, a document
// whitelist, a metadata filter). A stored conversation is shown by chatstored.js.
//
// An answer keeps streaming when the reader opens another conversation or starts a new chat:
// its turn is kept off-screen and shown again, still streaming (or finished), when its
// conversation is opened again; the list marks it as generating meanwhile. Stop stops the
// answer on screen. Every message goes through t() (strings/chat.js) and is shown again in the
// new language when the language changes.
//
// Issue 38: each answer has its tools (turntools.js: copy, rating, regenerate of the last one);
// a regenerated answer is a new version of its turn, shown in place of the old one with the
// earlier versions folded under it.
import { api, errorFrom, request } from "./api.js";
import { initKeyControl } from "./auth.js";
import { SearchOptions } from "./chatoptions.js";
import { isFaqDirect, storedTurns } from "./chatstored.js";
import { ConversationList } from "./conversations.js";
import { h } from "./dom.js";
import { EvidencePanel } from "./evidence.js";
import { t, translatePage } from "./i18n.js";
import { readEvents } from "./sse.js";
import "./strings/chat.js";
import { TurnView } from "./turn.js";
import { TurnTools } from "./turntools.js";

const $ = (id) => document.getElementById(id);
const BUSY_POLL_MS = 1500;

const kbSelect = $("kb");
const thread = $("thread");
const input = $("message");
const side = $("chat-side");
const panel = new EvidencePanel($("evidence-panel"));
const searchOptions = new SearchOptions(); // chatoptions.js

/** The KB's READY documents and metadata fields, for the search options. */
function loadDocs(kbId) {
  return searchOptions.load(kbId);
}

const views = new WeakMap(); // article.turn -> TurnView
// shown: the stream whose turn is on screen (null: none); streams: every running answer
const state = { conversationId: null, kbId: null, shown: null, notice: null, busyTimer: null };
const streams = new Set();

const conversations = new ConversationList({
  list: $("conversation-list"),
  notice: $("side-notice"),
  search: $("conversation-search"),
  onOpen: (id) => openConversation(id),
  onDeleted: (id, items) => {
    if (id !== state.conversationId) return;
    setUrl(null); // a reload before the next one has loaded must not ask for the deleted one
    if (items.length) openConversation(items[0].id);
    else newChat();
  },
});

function openEvidence(item, opener) {
  panel.open(item, opener);
}

/** The composer's notice: t(key, params), kept so a language change shows it again. */
function notice(key = null, params = {}) {
  state.notice = key ? [key, params] : null;
  $("composer-notice").textContent = key ? t(key, params) : "";
}

/** An error in words, without the server's ids or codes. */
function errorKey(error) {
  if (error?.code === "conversation_busy") return ["chat.notice.busy", {}];
  if (error?.code === "chat_model_failed") return ["chat.status.modelFailed", {}];
  if (error?.code === "network_error" || error?.status === 0) return ["chat.error.network", {}];
  if (error?.status === 404 || error?.code === "not_found") return ["chat.error.notFound", {}];
  if (error?.status === 429) return ["chat.error.rateLimited", {}];
  if (error?.status === 503) return ["chat.error.unavailable", {}];
  return ["chat.error.other", { reason: String(error?.message || error) }];
}

function setBusy() {
  const busy = Boolean(state.shown);
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
    kbSelect.append(h("option", { value: kbId, dataset: { locked: "true" } },
      t("chat.kb.locked", { id: kbId })));
  }
  const changed = kbId && kbSelect.value !== kbId;
  if (kbId) kbSelect.value = kbId;
  kbSelect.disabled = Boolean(kbId);
  if (changed) loadDocs(kbId);
}

function emptyHint() {
  return h("p", { class: "empty-thread", id: "empty-thread", dataset: { i18n: "chat.empty" } },
    t("chat.empty"));
}

function disposeNodes(nodes) {
  for (const node of nodes) {
    if (node.matches?.("article.turn")) views.get(node)?.dispose();
  }
}

/** Take the thread off screen: a streaming turn's thread is kept for its return, the rest
 * gives its images back. */
function leaveThread() {
  panel.close();
  const nodes = [...thread.children];
  if (state.shown) {
    state.shown.nodes = nodes;
    const title = state.shown.question.slice(0, 60);
    state.shown = null;
    notice("chat.notice.background", { title });
  } else {
    disposeNodes(nodes);
  }
  thread.replaceChildren();
  setBusy();
}

function makeView(question, ids) {
  const view = new TurnView(question, openEvidence);
  views.set(view.element, view);
  view.attachTools(new TurnTools(view, { ids, onRegenerate: regenerate }));
  return view;
}

function addTurn(question, ids = () => null) {
  const view = makeView(question, ids);
  $("empty-thread")?.remove();
  thread.append(view.element);
  view.element.scrollIntoView({ block: "end" });
  return view;
}

function stopStreaming() {
  state.shown?.controller.abort();
}

function closeSideOnNarrow() {
  side.classList.remove("open");
  $("side-toggle").setAttribute("aria-expanded", "false");
}

/** Start a draft: nothing exists server-side until its first message is sent. */
function newChat() {
  leaveThread();
  state.conversationId = null;
  state.kbId = null;
  for (const option of kbSelect.querySelectorAll("option[data-locked]")) option.remove();
  kbSelect.disabled = false;
  loadDocs(kbSelect.value);
  thread.replaceChildren(emptyHint());
  conversations.setCurrent(null);
  setUrl(null);
  closeSideOnNarrow();
  input.focus();
}

function streamFor(conversationId) {
  return [...streams].find((stream) => stream.conversationId === conversationId) || null;
}

function show(conversationId, kbId) {
  state.conversationId = conversationId;
  state.kbId = kbId;
  lockKb(kbId);
  conversations.setCurrent(conversationId);
  setUrl(conversationId);
  closeSideOnNarrow();
}

/** Show a stored conversation as it was answered (its turns carry their evidence and trace);
 * one whose answer streams from this page comes back as it is, still streaming. */
async function openConversation(id) {
  const running = streamFor(id);
  if (running) {
    if (state.shown === running) return;
    leaveThread();
    thread.replaceChildren(...(running.nodes || []));
    running.nodes = null;
    state.shown = running;
    notice();
    setBusy();
    show(id, running.kbId);
    return;
  }
  let conversation;
  try {
    conversation = await api(`/api/conversations/${encodeURIComponent(id)}`);
  } catch (error) {
    notice("chat.notice.openFailed", { reason: t(...errorKey(error)) });
    if (error.status === 404) await conversations.refresh();
    return;
  }
  leaveThread();
  if (state.notice?.[0] === "chat.notice.openFailed") notice();
  // chatstored.js: a regenerated turn's earlier versions fold under the version shown
  for (const view of storedTurns(conversation, makeView)) thread.append(view.element);
  if (!conversation.turns.length) thread.append(emptyHint());
  markLast();
  show(conversation.id, conversation.kb_id);
}

/** Only the conversation's last answer can be regenerated. */
function markLast() {
  const turns = [...thread.children].filter((node) => node.matches?.("article.turn"));
  turns.forEach((node, index) => views.get(node)?.tools.setRegenerable(index === turns.length - 1));
}

/** Answer the last turn's question again: a new version of it, the old one kept. */
function regenerate(view) {
  const turnId = view.element.dataset.turnId;
  if (state.shown || !turnId) return;
  ask(view.question, { regenerate_turn_id: turnId }, view);
}

function onTrace(stream, data) {
  stream.conversationId = data.conversation_id;
  const { view } = stream;
  view.element.dataset.turnId = data.turn_id;
  view.setEvidence(data.evidence);
  view.setTrace(data.trace);
  view.setStatus("chat.status.writing");
  searchOptions.learnDefaults(stream.sent, data.trace);
  if (state.shown === stream && !state.conversationId) { // the draft now exists on the server
    show(data.conversation_id, stream.kbId);
  }
  conversations.refresh();
}

/** A 409: the conversation answers elsewhere; say so until that answer has ended. */
function watchBusy(conversationId) {
  clearTimeout(state.busyTimer);
  state.busyTimer = setTimeout(async () => {
    if (state.notice?.[0] !== "chat.notice.busy") return;
    let generating = true;
    try {
      const items = await api("/api/conversations");
      generating = items.some((item) => item.id === conversationId && item.generating);
    } catch {
      generating = true; // ask again
    }
    if (generating) {
      watchBusy(conversationId);
      return;
    }
    notice();
    conversations.refresh();
    if (state.conversationId === conversationId && !state.shown) openConversation(conversationId);
  }, BUSY_POLL_MS);
}

async function send(event) {
  event.preventDefault();
  if (state.shown) return;
  const message = input.value.trim();
  const kbId = state.conversationId ? state.kbId : kbSelect.value;
  if (!message) return notice("chat.notice.typeFirst");
  if (!kbId) return notice("chat.notice.chooseKb");
  if (searchOptions.checked() === undefined) { // the editor says what is wrong
    $("chat-options").open = true;
    return;
  }
  notice();
  input.value = "";
  searchOptions.foldOnPhones();
  await ask(message);
}

/** Stream one answer; `extra` joins the request (regenerate), `replaced` is the turn a
 * regenerated answer replaces (hidden meanwhile, the conversation re-read when it is done). */
async function ask(message, extra = {}, replaced = null) {
  const kbId = state.conversationId ? state.kbId : kbSelect.value;
  if (replaced) replaced.element.hidden = true;
  let stream = null;
  let view = null;
  // rated once stored: the turn's ids are known from its trace, it is complete when done
  const ids = () => ({ conversationId: stream?.conversationId,
    turnId: view?.element.dataset.done ? view.element.dataset.turnId : null });
  view = addTurn(message, ids);
  view.setStatus("chat.status.searching");
  const controller = new AbortController();
  const sent = searchOptions.body();
  stream = { controller, view, question: message, kbId, sent,
    conversationId: state.conversationId, nodes: null };
  streams.add(stream);
  state.shown = stream;
  setBusy();
  const body = { conversation_id: state.conversationId, kb_id: kbId, message, ...sent, ...extra };
  let finished = false;
  let faqDirect = false;
  try {
    const response = await request("/api/chat/stream", {
      method: "POST", signal: controller.signal, body: JSON.stringify(body),
      headers: { "content-type": "application/json", accept: "text/event-stream" },
    });
    if (!response.ok) throw await errorFrom(response);
    for await (const { event: name, data } of readEvents(response)) {
      if (name === "trace") {
        faqDirect = isFaqDirect(data.trace);
        onTrace(stream, data);
      }
      else if (name === "delta") view.appendDelta(data.text);
      else if (name === "citations") view.setAnswer(data.answer, data.citations, data.assets);
      else if (name === "error") {
        finished = true;
        view.flush();
        const [key, params] = errorKey(data);
        view.setStatus(key === "chat.error.other" ? "chat.status.failed" : key,
          { reason: data.message }, "error");
      } else if (name === "done") {
        finished = true;
        view.element.dataset.done = "true";
        markLast();
        view.setStatus(faqDirect ? "chat.status.faq"
          : data.extractive && view.evidence.length ? "chat.status.extractive" : null);
      }
    }
    if (!finished) view.setStatus("chat.status.cut", {}, "error");
  } catch (error) {
    view.flush();
    if (error.name === "AbortError") {
      view.setStatus("chat.status.stopped", {}, "stopped");
    } else if (error.code === "conversation_busy" && !view.element.dataset.turnId) {
      // nothing was stored: the question goes back into the composer
      view.dispose();
      view.element.remove();
      if (!thread.querySelector("article.turn")) thread.append(emptyHint());
      if (!input.value) input.value = message;
      notice("chat.notice.busy");
      watchBusy(stream.conversationId);
    } else {
      if (searchOptions.claims(error)) $("chat-options").open = true;
      const [key, params] = errorKey(error);
      view.setStatus(key, params, "error");
    }
  } finally {
    streams.delete(stream);
    if (state.shown === stream) state.shown = null;
    else if (stream.nodes) disposeNodes(stream.nodes); // ended off screen: it is stored
    if (state.notice?.[0] === "chat.notice.background" && ![...streams].some((s) => s.nodes)) {
      notice();
    }
    setBusy();
    conversations.refresh();
  }
  if (replaced) {
    if (finished && state.conversationId === stream.conversationId) {
      await openConversation(stream.conversationId); // the new version, the old folded under
    } else {
      replaced.element.hidden = false;
    }
  }
}

// ---------- knowledge bases, events, start ----------

async function loadKbs() {
  try {
    const kbs = await api("/api/kbs");
    const locked = state.conversationId ? state.kbId : null;
    kbSelect.replaceChildren(...kbs.map((kb) => h("option", { value: kb.id }, kb.name)));
    conversations.setKbNames(kbs);
    if (locked) lockKb(locked);
    if (!kbs.length) notice("chat.notice.noKb");
    else if (["chat.notice.listKbsFailed", "chat.notice.noKb"].includes(state.notice?.[0])) notice();
  } catch (error) {
    notice("chat.notice.listKbsFailed", { reason: t(...errorKey(error)) });
  }
  await loadDocs(state.conversationId ? state.kbId : kbSelect.value);
  searchOptions.render();
}

function relabel() {
  const shownViews = [...thread.querySelectorAll("article.turn")];
  const offScreen = [...streams].flatMap((s) => s.nodes || []);
  for (const element of [...shownViews, ...offScreen]) views.get(element)?.relabel();
  for (const option of kbSelect.querySelectorAll("option[data-locked]")) {
    option.textContent = t("chat.kb.locked", { id: option.value });
  }
  if (state.notice) $("composer-notice").textContent = t(...state.notice);
  searchOptions.relabel();
}

thread.addEventListener("click", (event) => {
  const link = event.target.closest("a.citation");
  if (!link) return;
  event.preventDefault();
  const view = views.get(link.closest("article.turn"));
  const item = view?.item(Number(link.dataset.citation));
  if (item) openEvidence(item, link);
  else notice("chat.notice.evidenceMissing", { n: link.dataset.citation });
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
kbSelect.addEventListener("change", () => loadDocs(kbSelect.value).then(() => searchOptions.render()));
document.addEventListener("ragsift:language", relabel);

initKeyControl($("key-control"), {
  onKeyEntered: () => Promise.all([loadKbs(), conversations.refresh()]),
});

async function start() {
  translatePage();
  searchOptions.render();
  await Promise.all([loadKbs(), conversations.refresh()]);
  const wanted = new URLSearchParams(location.search).get("c");
  if (wanted) await openConversation(wanted);
  document.body.dataset.ready = "true";
}
start();
