// The conversation list of the chat page: newest first, open on click, delete (409 while a
// turn is generating is shown, not swallowed).
import { api, describe } from "./api.js";
import { h, say } from "./dom.js";

const LIST_FAILED = "Could not list conversations: ";

function when(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleString();
}

export class ConversationList {
  constructor({ list, notice, onOpen, onDeleted }) {
    this.list = list;
    this.notice = notice;
    this.onOpen = onOpen;
    this.onDeleted = onDeleted;
    this.items = [];
    this.current = null;
  }

  /** Reload from the server; returns the items (newest first). */
  async refresh() {
    try {
      this.items = await api("/api/conversations");
      if (this.notice.textContent.startsWith(LIST_FAILED)) say(this.notice, "");
    } catch (error) {
      say(this.notice, LIST_FAILED + describe(error));
    }
    this.render();
    return this.items;
  }

  setCurrent(id) {
    this.current = id;
    this.render();
  }

  render() {
    const rows = this.items.map((item) => {
      const title = item.title || "(untitled)";
      const meta = [`${item.turn_count} turn${item.turn_count === 1 ? "" : "s"}`,
        when(item.updated_at)].filter(Boolean).join(" · ");
      return h("li", {
        class: item.id === this.current ? "current" : null,
        dataset: { conversationId: item.id },
      },
      h("button", {
        type: "button", class: "open", title,
        "aria-current": item.id === this.current ? "true" : null,
        onclick: () => this.onOpen(item.id),
      }, h("span", {}, title), h("span", { class: "small muted" }, meta,
        item.generating ? " · generating…" : "")),
      h("button", {
        type: "button", class: "delete", "aria-label": `Delete conversation: ${title}`,
        title: "Delete", onclick: () => this.remove(item),
      }, "✕"));
    });
    this.list.replaceChildren(...(rows.length ? rows
      : [h("li", { class: "muted small" }, "No conversation yet.")]));
  }

  async remove(item) {
    if (!window.confirm(`Delete the conversation “${item.title || "(untitled)"}”?`)) return;
    say(this.notice, "");
    try {
      await api(`/api/conversations/${encodeURIComponent(item.id)}`, { method: "DELETE" });
    } catch (error) {
      // 409: a turn is still generating (the message says so); 404: already gone, as wanted
      if (error.status !== 404) {
        say(this.notice, `Not deleted: ${describe(error)}`);
        return;
      }
    }
    const items = await this.refresh();
    this.onDeleted(item.id, items);
  }
}
