// Small formatters of the management pages.
import { h } from "./dom.js";

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
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** A <time> with the local date and time, the ISO value in its datetime attribute. */
export function timeNode(iso) {
  if (!iso) return "–";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return h("time", { datetime: date.toISOString(), title: date.toISOString() },
    date.toLocaleString());
}

/** "1 chunk", "2 chunks". */
export function plural(count, word, many = `${word}s`) {
  return `${count} ${count === 1 ? word : many}`;
}
