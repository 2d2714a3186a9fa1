// The language switch of every page's header: a small select "English / 中文" (each name in its
// own language). Choosing one calls setLanguage (i18n.js): the choice is remembered in
// localStorage, the static texts are translated again and the page re-renders what it built
// (the `ragsift:language` event). Loaded as its own module by every page, before the page's
// script: it also translates the header (navigation links marked data-i18n).
import { language, LANGUAGES, setLanguage, t, translatePage } from "./i18n.js";
import "./strings/common.js";

const SELECT_ID = "lang-switch";

function build(header) {
  const select = document.createElement("select");
  select.id = SELECT_ID;
  select.className = "lang-switch";
  select.dataset.i18nAttr = "aria-label:common.lang.label;title:common.lang.label";
  for (const lang of LANGUAGES) {
    const option = document.createElement("option");
    option.value = lang;
    option.lang = lang; // read out in its own language
    option.textContent = t(`common.lang.${lang}`);
    select.append(option);
  }
  const before = header.querySelector("#key-control");
  if (before) before.before(select);
  else header.append(select);
  return select;
}

/** Wire (or create) the header's language select; returns it, or null without a header. */
export function initLanguageSwitch(root = document) {
  const header = root.querySelector("header.topbar");
  if (!header) return null;
  const select = root.getElementById(SELECT_ID) || build(header);
  if (select.dataset.wired) return select;
  select.dataset.wired = "true";
  select.value = language();
  select.addEventListener("change", () => setLanguage(select.value));
  document.addEventListener("ragsift:language", () => {
    select.value = language();
  });
  translatePage(header);
  for (const title of document.querySelectorAll("head title[data-i18n]")) {
    title.textContent = t(title.dataset.i18n);
  }
  return select;
}

initLanguageSwitch();
