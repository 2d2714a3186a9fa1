// The conversation list of the chat page: newest first, open on click, delete (409 while a
// turn is generating is shown, not swallowed), and the desktop sidebar's fold into a 64 px icon
// rail (new chat, each conversation as its initial named by its title, delete of the current
// one), remembered in localStorage. On a phone the sidebar stays a list folded under its
// "Conversations" toggle at the top of the page (chat.js); the rail applies to wide screens only.
//
// A failed list load is retried (growing pauses) until the server answers, and its notice is
// cleared then; a "not deleted: still generating" notice is cleared once that conversation has
// stopped generating (the list is re-read every few seconds while one is generating).
//
// Issue 38: the list is searched (title and content, `?q=`), grouped under each knowledge
// base's name, and a conversation is renamed in place (PATCH); dates follow the UI language.
import { api, describe } from "./api.js";
import { h, say } from "./dom.js";
import { language, t, translatePage } from "./i18n.js";
import "./strings/panel.js";

const RAIL_KEY = "ragsift.rail";
const RETRY_MS = [2000, 4000, 8000, 15000, 30000];
const GENERATING_POLL_MS = 2000;

const SEARCH_DELAY_MS = 250;

/** A date in the UI's language (not the browser's). */
export function when(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? ""
    : date.toLocaleString(language(), { dateStyle: "medium", timeStyle: "short" });
}

/** The first letter (or CJK character) of a title, for the folded rail. */
function initial(title) {
  const first = Array.from(title.trim().replace(/^[(（[【"“'‘]+/u, ""))[0] || "?";
  return first.toLocaleUpperCase();
}

function storedRail() {
  try {
    return localStorage.getItem(RAIL_KEY);
  } catch {
    return null; // storage off: the sidebar starts unfolded
  }
}

/**
 * The fold of the desktop sidebar: `toggle` (aria-expanded) folds `side` to the icon rail and
 * back; body.rail-folded is what the stylesheet reads (wide screens only).
 */
export class ConversationRail {
  constructor(side, toggle) {
    this.side = side;
    this.toggle = toggle;
    this.folded = storedRail() === "folded";
    toggle.addEventListener("click", () => this.setFolded(!this.folded, true));
    document.addEventListener("ragsift:language", () => this.render());
    this.render();
  }

  setFolded(folded, remember = false) {
    this.folded = folded;
    if (remember) {
      document.body.classList.add("rail-animate");
      try {
        localStorage.setItem(RAIL_KEY, folded ? "folded" : "expanded");
      } catch {
        // not remembered, still folded
      }
    }
    this.render();
  }

  render() {
    document.body.classList.toggle("rail-folded", this.folded);
    this.side.dataset.rail = this.folded ? "folded" : "expanded";
    this.toggle.setAttribute("aria-expanded", String(!this.folded));
    this.toggle.setAttribute("aria-label", t("rail.toggle"));
    this.toggle.title = t(this.folded ? "rail.unfold" : "rail.fold");
  }
}

export class ConversationList {
  constructor({ list, notice, onOpen, onDeleted, search = null }) {
    this.list = list;
    this.search = search; // the search box (input[type=search]); its text filters the list
    this.query = "";
    this.kbNames = new Map(); // kb id -> name, for the group headings
    this.editing = null; // the conversation whose title is being edited
    this.notice = notice;
    this.noticeKind = null; // "list" | {busy: conversation id} | "delete", what the notice says
    this.onOpen = onOpen;
    this.onDeleted = onDeleted;
    this.items = [];
    this.current = null;
    this.shown = null; // what the list shows now (render skips an unchanged one)
    this.failures = 0;
    this.timer = null;
    const side = list.closest(".chat-side");
    const toggle = document.getElementById("rail-toggle");
    if (side) translatePage(side);
    this.rail = side && toggle ? new ConversationRail(side, toggle) : null;
    document.addEventListener("ragsift:language", () => {
      if (side) translatePage(side);
      this.render();
    });
    let typing = null;
    search?.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => {
        this.query = search.value.trim();
        this.refresh();
      }, SEARCH_DELAY_MS);
    });
  }

  /** The knowledge bases' names (the group headings show them instead of ids). */
  setKbNames(kbs) {
    this.kbNames = new Map(kbs.map((kb) => [kb.id, kb.name]));
    this.shown = null;
    this.render();
  }

  setNotice(message, kind) {
    say(this.notice, message);
    this.noticeKind = message ? kind : null;
  }

  /** Reload from the server; returns the items (newest first). */
  async refresh() {
    clearTimeout(this.timer);
    this.timer = null;
    let pause = null;
    try {
      const query = this.query ? `?q=${encodeURIComponent(this.query)}` : "";
      this.items = await api(`/api/conversations${query}`);
      this.failures = 0;
      if (this.noticeKind === "list") this.setNotice("", null);
      const busy = this.noticeKind?.busy;
      if (busy && !this.items.some((item) => item.id === busy && item.generating)) {
        this.setNotice("", null); // the answer has ended (or the conversation is gone)
      }
      if (this.items.some((item) => item.generating)) pause = GENERATING_POLL_MS;
    } catch (error) {
      this.setNotice(t("rail.listFailed", { reason: describe(error) }), "list");
      // a server down or failing is asked again; a refusal (401, 403) waits for the user
      if (!error.status || error.status >= 500) {
        pause = RETRY_MS[Math.min(this.failures, RETRY_MS.length - 1)];
        this.failures += 1;
      }
    }
    clearTimeout(this.timer); // another refresh may have ended meanwhile: one timer only
    this.timer = pause === null ? null : setTimeout(() => this.refresh(), pause);
    this.render();
    return this.items;
  }

  setCurrent(id) {
    this.current = id;
    this.render();
  }

  render() {
    // nothing changed (a poll while one generates): keep the nodes, hover and focus as they are
    const shown = JSON.stringify([language(), this.current, this.editing, this.query,
      this.items.map((item) => [item.id, item.title, item.turn_count, item.updated_at,
        Boolean(item.generating)])]);
    if (shown === this.shown && this.list.isConnected) return;
    this.shown = shown;
    // a keyboard user keeps the focus on the same button across a re-render
    const active = document.activeElement;
    const focused = this.list.contains(active) && active.closest("li[data-conversation-id]")
      ? [active.closest("li").dataset.conversationId, active.classList.contains("delete")
        ? "delete" : active.classList.contains("rename") ? "rename" : "open"] : null;
    const rows = [];
    for (const [kbId, items] of this.groups()) {
      const name = this.kbNames.get(kbId) || kbId;
      rows.push(h("li", { class: "group small muted", dataset: { kbId } }, name));
      rows.push(...items.map((item) => this.row(item)));
    }
    const empty = this.query ? t("rail.noMatch", { query: this.query }) : t("rail.empty");
    this.list.replaceChildren(...(rows.length ? rows
      : [h("li", { class: "muted small empty" }, empty)]));
    if (focused) {
      const row = [...this.list.children].find((li) => li.dataset.conversationId === focused[0]);
      row?.querySelector(`button.${focused[1]}`)?.focus();
    }
    this.list.querySelector("form.rename input")?.focus();
  }

  /** The items by knowledge base, newest group first, newest first within a group. */
  groups() {
    const groups = new Map();
    for (const item of this.items) {
      if (!groups.has(item.kb_id)) groups.set(item.kb_id, []);
      groups.get(item.kb_id).push(item);
    }
    return groups;
  }

  row(item) {
    const title = item.title || t("rail.untitled");
    const turns = t(item.turn_count === 1 ? "rail.turns.one" : "rail.turns.other",
      { count: item.turn_count });
    const meta = [turns, when(item.updated_at)].filter(Boolean).join(" · ");
    const current = item.id === this.current;
    if (item.id === this.editing) return this.renameRow(item, title, current);
    return h("li", {
      class: current ? "current" : null,
      dataset: item.generating ? { conversationId: item.id, generating: "true" }
        : { conversationId: item.id },
    },
    h("button", {
      type: "button", class: "open", title,
      "aria-current": current ? "true" : null,
      onclick: () => this.onOpen(item.id),
    },
    h("span", { class: "initial", "aria-hidden": "true" }, initial(title)),
    h("span", { class: "title" }, title),
    h("span", { class: "meta small muted" }, meta),
    item.generating ? h("span", { class: "badge generating" }, t("rail.generating")) : null),
    h("button", {
      type: "button", class: "rename", "aria-label": t("rail.renameLabel", { title }),
      title: t("rail.rename"), onclick: () => this.startRename(item.id),
    }, h("span", { "aria-hidden": "true" }, "✎")),
    h("button", {
      type: "button", class: "delete", "aria-label": t("rail.deleteLabel", { title }),
      title: t("rail.delete"), onclick: () => this.remove(item),
    }, h("span", { "aria-hidden": "true" }, "✕")));
  }

  startRename(id) {
    this.editing = id;
    this.render();
  }

  /** The row while its title is edited: Enter (or Save) renames, Escape (or Cancel) does not. */
  renameRow(item, title, current) {
    const input = h("input", { type: "text", value: title, maxlength: "200", required: true,
      "aria-label": t("rail.renameField") });
    const stop = () => {
      this.editing = null;
      this.render();
      const row = [...this.list.children].find((li) => li.dataset.conversationId === item.id);
      row?.querySelector("button.rename")?.focus();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        stop();
      }
    });
    const form = h("form", { class: "rename" }, input,
      h("button", { type: "submit", class: "save" }, t("rail.renameSave")),
      h("button", { type: "button", class: "cancel secondary", onclick: stop },
        t("rail.renameCancel")));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const wanted = input.value.trim();
      if (!wanted) return;
      try {
        await api(`/api/conversations/${encodeURIComponent(item.id)}`, {
          method: "PATCH", json: { title: wanted } });
        item.title = wanted;
        this.setNotice("", null);
      } catch (error) {
        this.setNotice(t("rail.notRenamed", { reason: describe(error) }), "rename");
      }
      stop();
      this.refresh();
    });
    return h("li", { class: current ? "current editing" : "editing",
      dataset: { conversationId: item.id } }, form);
  }

  async remove(item) {
    const title = item.title || t("rail.untitled");
    if (!window.confirm(t("rail.confirmDelete", { title }))) return;
    this.setNotice("", null);
    try {
      await api(`/api/conversations/${encodeURIComponent(item.id)}`, { method: "DELETE" });
    } catch (error) {
      // 409: a turn is still generating (the message says so); 404: already gone, as wanted
      if (error.status !== 404) {
        this.setNotice(t("rail.notDeleted", { reason: describe(error) }),
          error.status === 409 ? { busy: item.id } : "delete");
        if (error.status === 409) this.refresh(); // re-read while it generates, then clear
        return;
      }
    }
    const index = this.items.findIndex((other) => other.id === item.id);
    const items = await this.refresh();
    this.onDeleted(item.id, items);
    // the focused row is gone: the keyboard goes on from the row that took its place
    if (!document.activeElement || document.activeElement === document.body) {
      const rows = [...this.list.querySelectorAll("li[data-conversation-id] button.open")];
      (rows[Math.min(Math.max(index, 0), rows.length - 1)]
        || document.getElementById("new-chat"))?.focus();
    }
  }
}
