// Small formatters of the management pages, and the locator cells of the debug page.
import { h, locatorPhrases, sheetRange } from "./dom.js";
import { language, t } from "./i18n.js";
import "./strings/debug.js";

/** 1536 -> "1.5 KB" (binary multiples, as file managers show them). */
export function bytes(size) {
  if (size === null || size === undefined) return "–";
  const units = ["B", "KB", "MB", "GB"];
  let value = Number(size);
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = unit === 0 || value >= 10 ? 0 : 1;
  const number = formatNumber(value, { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return `${number} ${units[unit]}`;
}

/** A <time> with the local date and time, the ISO value in its datetime attribute. */
export function timeNode(iso) {
  if (!iso) return "–";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return h("time", { datetime: date.toISOString(), title: date.toISOString() },
    date.toLocaleString(language()));
}

/** "1 chunk", "2 chunks". */
export function plural(count, word, many = `${word}s`) {
  return `${count} ${count === 1 ? word : many}`;
}

// ---- locators of the debug page's hits table (area "debug") ----

const isSet = (value) => value !== null && value !== undefined && value !== "";

/** The one place a chunk sits, short, for a table cell: "Page 3" (第 3 页), "Q1!A2:D9",
 * "Slide 2", "Record 4" (else its JSON pointer), "A2:D9"; "" when the locator has none. */
export function locatorShort(locator) {
  const loc = locator || {};
  const parts = [];
  if (isSet(loc.page)) parts.push(t("debug.loc.page", { page: loc.page }));
  if (isSet(loc.sheet)) parts.push(sheetRange(loc.sheet, loc.cell_range));
  else if (isSet(loc.cell_range)) parts.push(loc.cell_range);
  if (isSet(loc.slide)) parts.push(t("debug.loc.slide", { slide: loc.slide }));
  if (isSet(loc.record)) parts.push(t("debug.loc.record", { record: loc.record }));
  else if (isSet(loc.pointer)) parts.push(loc.pointer);
  return parts.join(" · ");
}

/** Every part of a locator in words ("Page 3 · Sheet Q1!A2:D9 · Pointer /items/4"), no
 * section path; "" when the locator has none. */
export function locatorFull(locator) {
  return locatorPhrases(locator, []).join(" · ");
}

// ---- numbers in the page's language (issue 38: 1,234 / 1 234 / 12%) ----

/** 12345 -> "12,345" in the UI language's digits and grouping. */
export function formatNumber(value, options = {}) {
  if (value === null || value === undefined || Number.isNaN(Number(value))) return "–";
  return new Intl.NumberFormat(language(), options).format(Number(value));
}

/** 0.42 -> "42%" in the UI language. */
export function formatPercent(fraction) {
  return formatNumber(fraction, { style: "percent", maximumFractionDigits: 0 });
}
