// The page's language and its strings. Each area keeps its catalogue in js/strings/<area>.js
// ({ en: {...}, "zh-CN": {...} }, the same keys in both) and registers it on import. The
// language is the one chosen (remembered), else the browser's first Chinese or English one.
// Strings are whole sentences with {name} placeholders, never concatenated: Chinese word order
// differs from English.
const STORAGE_KEY = "ragsift.lang";
export const LANGUAGES = ["en", "zh-CN"];
const catalogue = { en: {}, "zh-CN": {} };

function detected() {
  let stored = null;
  try {
    stored = localStorage.getItem(STORAGE_KEY);
  } catch {
    stored = null; // storage may be off (private mode): fall back to the browser's
  }
  if (LANGUAGES.includes(stored)) return stored;
  for (const tag of navigator.languages || [navigator.language || "en"]) {
    const lower = String(tag).toLowerCase();
    if (lower.startsWith("zh")) return "zh-CN";
    if (lower.startsWith("en")) return "en";
  }
  return "en";
}

let current = detected();

export function language() {
  return current;
}

export function register(strings) {
  for (const lang of LANGUAGES) Object.assign(catalogue[lang], strings[lang] || {});
}

// The string for `key` in the current language, {name} replaced by params.name. A key missing
// in Chinese falls back to English, a key missing everywhere shows as itself (tests catch it).
export function t(key, params = {}) {
  const text = catalogue[current][key] ?? catalogue.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
}

// Elements with data-i18n="key" get the string as text; data-i18n-attr="title:key;aria-label:key"
// sets attributes. Called once per page load and again when the language changes.
export function translatePage(root = document) {
  document.documentElement.lang = current;
  for (const element of root.querySelectorAll("[data-i18n]")) {
    element.textContent = t(element.dataset.i18n);
  }
  for (const element of root.querySelectorAll("[data-i18n-attr]")) {
    for (const pair of element.dataset.i18nAttr.split(";")) {
      const [attr, key] = pair.split(":").map((part) => part.trim());
      if (attr && key) element.setAttribute(attr, t(key));
    }
  }
}

// Switch the language, remember it, and tell the page (which re-renders what it built).
export function setLanguage(lang) {
  if (!LANGUAGES.includes(lang) || lang === current) return;
  current = lang;
  try {
    localStorage.setItem(STORAGE_KEY, lang);
  } catch {
    // not remembered, still switched
  }
  translatePage();
  document.dispatchEvent(new CustomEvent("ragsift:language", { detail: { language: lang } }));
}
