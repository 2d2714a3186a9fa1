// Building DOM nodes without HTML strings: every text goes in as a Text node, so user and
// document text can never become markup.
import { t } from "./i18n.js";
import "./strings/common.js";

/**
 * h("td", {class: "num", dataset: {col: "rank"}}, "1") -> <td class="num" data-col="rank">1</td>
 * Attributes named on* become event listeners; null/undefined/false attributes and children
 * are skipped; strings and numbers become text nodes.
 */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

/** Append children (nodes, strings, numbers, nested arrays) to node as nodes or text. */
export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** Show `message` in an element (or hide it when message is empty). */
export function say(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

/** A number with fixed digits, or an en dash for null/undefined. */
export function num(value, digits = 4) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

/** An integer, or an en dash for null/undefined. */
export function int(value) {
  return value === null || value === undefined ? "–" : String(value);
}

/** A sheet range in A1 notation: `Q1!A2:D9`, the name quoted when it must be (`'Q 1'!A2`). */
export function sheetRange(sheet, range) {
  const name = /^[A-Za-z_][A-Za-z0-9_.]*$/.test(sheet) ? sheet : `'${sheet.replace(/'/g, "''")}'`;
  return range ? `${name}!${range}` : sheet;
}

const LOCATOR_PARTS = ["page", "sheet", "cells", "slide", "record", "pointer", "section"];

/** Where a chunk sits, as [kind, value] for the non-empty parts: [["page", "3"],
 * ["sheet", "Q1!A2:D9"], ["slide", "2"], ["record", "4"], ["pointer", "/items/4"],
 * ["section", "A › B"]]. */
export function locatorKinds(locator, headingPath) {
  const parts = [];
  const loc = locator || {};
  const set = (value) => value !== null && value !== undefined && value !== "";
  if (set(loc.page)) parts.push(["page", String(loc.page)]);
  if (set(loc.sheet)) parts.push(["sheet", sheetRange(loc.sheet, loc.cell_range)]);
  else if (set(loc.cell_range)) parts.push(["cells", loc.cell_range]);
  if (set(loc.slide)) parts.push(["slide", String(loc.slide)]);
  if (set(loc.record)) parts.push(["record", String(loc.record)]);
  if (set(loc.pointer)) parts.push(["pointer", loc.pointer]);
  if (headingPath && headingPath.length) parts.push(["section", headingPath.join(" › ")]);
  return parts.filter(([kind]) => LOCATOR_PARTS.includes(kind));
}

/** The same as [label, value] pairs, the labels in the page's language ("Page", "页码"):
 * [["Page", "3"], ["Sheet", "Q1!A2:D9"], ...]. */
export function locatorParts(locator, headingPath) {
  return locatorKinds(locator, headingPath)
    .map(([kind, value]) => [t(`common.locator.${kind}`), value]);
}

/** The same as phrases in the page's language: ["Page 3", "Slide 2"] / ["第 3 页", ...]. */
export function locatorPhrases(locator, headingPath) {
  return locatorKinds(locator, headingPath)
    .map(([kind, value]) => t(`common.locator.at.${kind}`, { value }));
}
