// Modal dialogs of the management pages (<dialog>.showModal(): the focus is trapped inside,
// Escape cancels, and the focus goes back to what had it). Built from nodes, never HTML.
import { describe } from "./api.js";
import { h, say } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/panel.js";

let counter = 0;

/**
 * Open a modal form and resolve to its result, or null when cancelled.
 *
 * - `title`, `description` (text), `fields`: nodes (inputs inside labels) shown in the form;
 * - `submitLabel` (default: "OK" in the page's language), `danger` (a red submit button);
 * - `ready()`: whether the submit button is enabled (re-checked on every input);
 * - `submit()`: async; its return value resolves the dialog; throwing an Error keeps the
 *   dialog open and shows its message (the server's message and code, for an ApiError).
 */
export function openDialog({ title, description = "", fields = [],
  submitLabel = t("panel.dialog.ok"), danger = false, ready = () => true,
  submit = async () => true, name = "dialog" }) {
  counter += 1;
  const titleId = `${name}-title-${counter}`;
  const helpId = `${name}-help-${counter}`;
  const errorId = `${name}-error-${counter}`;
  const error = h("p", { id: errorId, class: "error small", role: "alert", hidden: true });
  const ok = h("button", { type: "submit", class: danger ? "danger" : null,
    dataset: { part: "submit" } }, submitLabel);
  const cancel = h("button", { type: "button", class: "secondary", dataset: { part: "cancel" } },
    t("panel.dialog.cancel"));
  const form = h("form", { method: "dialog", novalidate: true },
    h("h2", { id: titleId }, title),
    description ? h("p", { id: helpId, class: "small" }, description) : null,
    fields, error,
    h("div", { class: "actions" }, ok, cancel));
  const node = h("dialog", {
    class: "manage-dialog", "aria-labelledby": titleId,
    "aria-describedby": description ? helpId : null, dataset: { dialog: name },
  }, form);
  const returnFocus = document.activeElement;
  document.body.append(node);

  const refresh = () => { ok.disabled = !ready(); };
  form.addEventListener("input", refresh);
  form.addEventListener("change", refresh);
  refresh();

  return new Promise((resolve) => {
    let result = null;
    let busy = false;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (busy || !ready()) return;
      busy = true;
      ok.disabled = true;
      node.setAttribute("aria-busy", "true");
      say(error, "");
      try {
        result = await submit();
        node.close();
      } catch (failure) {
        say(error, describe(failure));
        busy = false;
        node.removeAttribute("aria-busy");
        refresh();
      }
    });
    cancel.addEventListener("click", () => node.close());
    node.addEventListener("cancel", (event) => { // Escape: not while a request is running
      if (busy) event.preventDefault();
    });
    node.addEventListener("close", () => {
      node.remove();
      if (returnFocus instanceof HTMLElement && returnFocus.isConnected) returnFocus.focus();
      resolve(result);
    }, { once: true });
    node.showModal();
    const first = node.querySelector("input, textarea, select");
    (first || ok).focus();
  });
}
