// The knowledge-base settings page (issue 38): a KB's own chunking, OCR and search defaults
// over the server's settings (GET / PATCH /api/kbs/{id}/settings). An empty field uses the
// server's value; a change of chunking or OCR says the documents were built otherwise and
// offers the KB's reindex (POST /api/kbs/{id}/reindex).
import { api, describe } from "./api.js";
import { initKeyControl } from "./auth.js";
import { h, say } from "./dom.js";
import { t, translatePage } from "./i18n.js";
import { KbPicker, keepKbInLinks } from "./kbs.js";
import "./strings/common.js";
import "./strings/settings.js";

const $ = (id) => document.getElementById(id);
const CHOICES = {
  ocr: ["auto", "off"], mode: ["dense", "sparse", "hybrid"],
  fusion: ["rrf", "weighted", "zscore"], rerank: [true, false], rewrite: [true, false],
  small2big: [true, false],
};
const form = $("settings-form");
let shown = null; // the last GET/PATCH body of the chosen KB
let generation = 0;

const picker = new KbPicker({
  select: $("kb"), empty: $("kb-empty"), error: $("kb-error"), onChange: () => showKb(),
});

function valueText(value) {
  if (value === null || value === undefined) return t("settings.value.none");
  if (typeof value === "boolean") return t(`settings.value.${value}`);
  return String(value);
}

function controls() {
  return [...form.querySelectorAll("input[name], select[name]")];
}

/** Fill the form from a settings body: own values in the fields, defaults as hints. */
function render() {
  const kb = picker.current();
  $("settings-title").textContent = kb ? t("settings.titleOf", { kb: kb.name })
    : t("settings.title");
  for (const control of controls()) {
    const key = control.name;
    control.disabled = !shown;
    if (control.tagName === "SELECT") {
      const fallback = shown ? valueText(shown.defaults[key]) : "";
      control.replaceChildren(
        h("option", { value: "" }, t("settings.option.default", { value: fallback })),
        ...CHOICES[key].map((choice) => h("option", { value: String(choice) },
          valueText(choice))));
    }
    if (!shown) continue;
    const own = Object.hasOwn(shown.overrides, key);
    control.value = own && shown.overrides[key] !== null ? String(shown.overrides[key]) : "";
    if (control.tagName === "INPUT") control.placeholder = valueText(shown.defaults[key]);
    $(`hint-${key}`).textContent = t(own ? "settings.hint.own" : "settings.hint.default",
      { value: valueText(shown.defaults[key]) });
  }
  $("settings-save").disabled = !shown;
  renderBuild();
}

function renderBuild() {
  const changed = shown ? shown.changed_since_build : [];
  const labels = changed.map((key) => t(`settings.key.${key}`));
  say($("build-status"), !shown ? "" : changed.length
    ? t("settings.build.changed", { keys: labels.join(t("settings.build.separator")) })
    : t("settings.build.current"));
  $("build-status").className = changed.length ? "notice small" : "small";
  $("reindex").hidden = !changed.length;
}

/** The form's values as a PATCH body: changed own values set, emptied ones unset. */
function patchBody() {
  const set = {};
  const unset = [];
  for (const control of controls()) {
    const key = control.name;
    const own = Object.hasOwn(shown.overrides, key);
    const raw = control.value.trim();
    if (raw === "") {
      if (own) unset.push(key);
      continue;
    }
    let value = raw;
    if (raw === "true" || raw === "false") value = raw === "true";
    else if (control.type === "number") value = Number(raw);
    if (!own || shown.overrides[key] !== value) set[key] = value;
  }
  return { set, unset };
}

async function load() {
  const kb = picker.current();
  const mine = ++generation;
  shown = null;
  say($("settings-error"), "");
  if (kb) {
    try {
      const body = await api(`/api/kbs/${encodeURIComponent(kb.id)}/settings`);
      if (mine !== generation) return;
      shown = body;
    } catch (failure) {
      if (mine !== generation) return;
      say($("settings-error"), t("settings.error.load", { reason: describe(failure) }));
    }
  }
  render();
}

async function save(event) {
  event.preventDefault();
  const kb = picker.current();
  if (!kb || !shown) return;
  const body = patchBody();
  if (!Object.keys(body.set).length && !body.unset.length) {
    say($("settings-notice"), t("settings.unchanged"));
    return;
  }
  $("settings-save").disabled = true;
  try {
    shown = await api(`/api/kbs/${encodeURIComponent(kb.id)}/settings`,
      { method: "PATCH", json: body });
    say($("settings-error"), "");
    say($("settings-notice"), t("settings.saved"));
    render();
  } catch (failure) {
    // the fields keep what was typed, so the value the message names can be corrected
    say($("settings-notice"), "");
    say($("settings-error"), t("settings.error.save", { reason: describe(failure) }));
    $("settings-save").disabled = false;
  }
}

async function reindex() {
  const kb = picker.current();
  if (!kb) return;
  $("reindex").disabled = true;
  try {
    const body = await api(`/api/kbs/${encodeURIComponent(kb.id)}/reindex`, { method: "POST" });
    say($("reindex-error"), "");
    await load();
    say($("build-status"), t("settings.build.queued", { count: body.queued.length }));
  } catch (failure) {
    say($("reindex-error"), t("settings.build.reindexFailed", { reason: describe(failure) }));
  } finally {
    $("reindex").disabled = false;
  }
}

async function showKb() {
  keepKbInLinks(picker.current());
  say($("settings-notice"), "");
  await load();
}

translatePage();
document.addEventListener("ragsift:language", () => {
  picker.render();
  render();
});
initKeyControl($("key-control"), { onKeyEntered: () => picker.load().then(showKb) });
form.addEventListener("submit", save);
$("reindex").addEventListener("click", reindex);

(async () => {
  render();
  await picker.load();
  await showKb();
  document.body.setAttribute("data-ready", "true");
})();
