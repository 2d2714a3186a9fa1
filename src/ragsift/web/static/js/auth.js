// The API key of this browser tab: kept in sessionStorage (never localStorage, never the URL),
// asked for in a modal dialog when the server answers 401, and forgotten by the "Forget key"
// control in the top bar. With access control off the server never answers 401, so neither
// the dialog nor the control ever shows.
import { h, say } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/common.js";

const STORAGE_KEY = "ragsift.apiKey";
// what an Authorization header value can carry (visible ASCII), checked before any request
const KEY_SHAPE = /^[\x21-\x7e]+$/;

let memoryKey = null; // only when sessionStorage is unavailable (storage disabled)
let pending = null; // the open prompt: every request refused meanwhile waits on it
let dialog = null;
let control = null;
let keyRequired = false; // the server has answered 401 on this page
let onEntered = () => {};

/** The key of this tab, or null. */
export function storedKey() {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return memoryKey;
  }
}

function storeKey(key) {
  memoryKey = key;
  try {
    sessionStorage.setItem(STORAGE_KEY, key);
  } catch {
    // kept in memory only, for this page
  }
  renderControl();
}

/** Forget the key (only if it is still `key`, when given: a newer one is kept). */
export function forgetKey(key = undefined) {
  if (key !== undefined && storedKey() !== key) return;
  memoryKey = null;
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // nothing stored
  }
  renderControl();
}

/** "rs_…", "Bearer rs_…" or a pasted line -> the key, or "" when it cannot be one. */
function cleanKey(text) {
  const key = text.trim().replace(/^bearer\s+/i, "");
  return KEY_SHAPE.test(key) ? key : "";
}

function buildDialog() {
  const input = h("input", {
    id: "api-key-input", type: "password", autocomplete: "off", spellcheck: "false",
    autocapitalize: "off", required: true, "aria-describedby": "api-key-help api-key-error",
  });
  const error = h("p", { id: "api-key-error", class: "error small", role: "alert", hidden: true });
  const cancel = h("button", { type: "button", class: "secondary",
    dataset: { part: "cancel", i18n: "common.key.cancel" } }, t("common.key.cancel"));
  // method=dialog: even without this script the form never navigates, and the input has no
  // name, so the key can never end up in a URL
  const form = h("form", { method: "dialog", novalidate: true },
    h("h2", { id: "api-key-title", dataset: { i18n: "common.key.title" } }, t("common.key.title")),
    h("p", { id: "api-key-help", class: "small muted", dataset: { i18n: "common.key.help" } },
      t("common.key.help")),
    h("label", { for: "api-key-input" },
      h("span", { dataset: { i18n: "common.key.label" } }, t("common.key.label")), input),
    error,
    h("div", { class: "actions" },
      h("button", { type: "submit", dataset: { part: "submit", i18n: "common.key.submit" } },
        t("common.key.submit")), cancel));
  const node = h("dialog", {
    id: "api-key-dialog", class: "key-dialog", "aria-labelledby": "api-key-title",
    "aria-describedby": "api-key-help",
  }, form);
  document.body.append(node);
  return { node, form, input, error, cancel };
}

function showDialog(problem) {
  dialog ||= buildDialog();
  const { node, form, input, error, cancel } = dialog;
  const returnFocus = document.activeElement;
  input.value = "";
  say(error, problem);
  input.setAttribute("aria-invalid", problem ? "true" : "false");
  return new Promise((resolve) => {
    let result = null;
    const submit = (event) => {
      event.preventDefault();
      const key = cleanKey(input.value);
      if (!key) {
        say(error, t(input.value.trim() ? "common.key.badShape" : "common.key.empty"));
        input.setAttribute("aria-invalid", "true");
        input.focus();
        return;
      }
      result = key;
      node.close();
    };
    const dismiss = () => node.close();
    const closed = () => {
      form.removeEventListener("submit", submit);
      cancel.removeEventListener("click", dismiss);
      input.value = "";
      if (returnFocus instanceof HTMLElement && returnFocus.isConnected) returnFocus.focus();
      resolve(result);
    };
    form.addEventListener("submit", submit);
    cancel.addEventListener("click", dismiss);
    node.addEventListener("close", closed, { once: true }); // Escape closes it too
    node.showModal();
    input.focus();
  });
}

/**
 * Ask for a key (the dialog says `problem` when not empty); resolves to the key, now stored,
 * or null when cancelled. While the dialog is open every caller shares it.
 */
export function askForKey(problem = "") {
  keyRequired = true;
  if (!pending) {
    pending = showDialog(problem).then((key) => {
      pending = null;
      if (key) storeKey(key);
      else renderControl();
      return key;
    });
  }
  return pending;
}

function renderControl() {
  if (!control) return;
  const key = storedKey();
  control.hidden = !key && !keyRequired;
  control.textContent = t(key ? "common.key.forget" : "common.key.enter");
  control.title = t(key ? "common.key.forgetTitle" : "common.key.enterTitle");
  control.dataset.state = key ? "signed-in" : "signed-out";
}

/**
 * The "Forget key" / "Enter API key" button of the top bar. `onKeyEntered` runs after a key is
 * entered through it (the page reloads what it shows); forgetting the key reloads the page, so
 * nothing read with the key stays on screen.
 */
export function initKeyControl(button, { onKeyEntered } = {}) {
  control = button;
  onEntered = onKeyEntered || onEntered;
  button.addEventListener("click", async () => {
    if (storedKey()) {
      forgetKey();
      location.reload();
      return;
    }
    if (await askForKey()) onEntered();
  });
  renderControl();
}

// a language switch: the control and the dialog's texts follow it (an open dialog's error
// stays as it was said)
document.addEventListener("ragsift:language", renderControl);
