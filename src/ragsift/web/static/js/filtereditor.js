// The metadata filter editor of the debug and chat pages (issue 36): rows of field / operator /
// typed value, joined by "all of" ($and) or "any of" ($or), built into the JSON `filter` the
// REST search, explain and chat take (docs/how-to/metadata-filters.md). The JSON it will send is
// shown as it is edited; a filter the server refuses (400 naming `filter…`) is shown here, with
// the server's words. The KB's known fields come from GET /api/kbs/{id}/metadata-keys (only
// the documents the caller's key may see), offered as suggestions with their sample values.
import { api, describe } from "./api.js";
import { h, say } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/filter.js";

const OPERATORS = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "exists"];
const TYPES = ["string", "number", "boolean", "date", "list"];
const LIST_OPS = new Set(["in", "nin"]);
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;
// the type a known field's values suggest (a list field is matched element by element)
const SUGGESTED = { string: "string", number: "number", boolean: "boolean", date: "date",
  datetime: "date", list: "string" };

/** A stored value as text: a tagged date as its ISO text, a list as "a, b". */
export function shownValue(value) {
  if (Array.isArray(value)) return value.join(", ");
  if (value && typeof value === "object") return String(value.$date ?? value.$datetime ?? "");
  return String(value);
}

/** One typed operand from its text: {value} (JSON), or {error: [key, params]}. */
function operand(type, raw, n) {
  if (type === "number") {
    const number = Number(raw);
    return raw === "" || !Number.isFinite(number)
      ? { error: ["filter.error.number", { n, value: raw }] } : { value: number };
  }
  if (type === "boolean") return { value: raw === "true" };
  if (type === "date") {
    if (DATE.test(raw)) return { value: { $date: raw } };
    if (DATETIME.test(raw)) return { value: { $datetime: raw } };
    return { error: ["filter.error.date", { n }] };
  }
  return { value: raw };
}

/** The editor's type of a stored operand, or null for one it cannot show. */
function typeOf(value) {
  if (typeof value === "number") return "number";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "string") return "string";
  if (value && typeof value === "object" && ("$date" in value || "$datetime" in value)) {
    return "date";
  }
  return null;
}

/** {field, op, type, text} rows of one `{field: {$op: value, ...}}`, or null. */
function fieldRows(condition) {
  const entries = Object.entries(condition);
  if (entries.length !== 1) return null;
  const [field, ops] = entries[0];
  if (field.startsWith("$") || !ops || typeof ops !== "object" || Array.isArray(ops)) return null;
  const rows = [];
  for (const [name, value] of Object.entries(ops)) {
    const op = name.slice(1);
    if (!name.startsWith("$") || !OPERATORS.includes(op)) return null;
    const items = LIST_OPS.has(op) ? value : [value];
    if (!Array.isArray(items) || !items.length) return null;
    const types = new Set(items.map(typeOf));
    if (types.size !== 1 || types.has(null)) return null;
    const type = op === "exists" ? "string" : [...types][0];
    rows.push({ field, op, type, text: shownValue(value) });
  }
  return rows;
}

/** A filter as the editor's rows and join ({join, rows}), or null when it has another shape. */
function conditionsOf(filter) {
  for (const join of ["$and", "$or"]) {
    if (Object.keys(filter).length === 1 && Array.isArray(filter[join])) {
      const rows = filter[join].map(fieldRows);
      if (rows.some((row) => row === null)) return null;
      // two operators on one field are two conditions: only "all of" keeps their meaning
      if (join === "$or" && rows.some((row) => row.length > 1)) return null;
      return { join, rows: rows.flat() };
    }
  }
  const rows = fieldRows(filter);
  return rows && { join: "$and", rows };
}

export class FilterEditor {
  constructor(root) {
    this.root = root;
    this.rows = root.querySelector("#filter-rows");
    this.join = root.querySelector("#filter-join");
    this.keysList = root.querySelector("#filter-keys");
    this.preview = root.querySelector("#filter-json");
    this.error = root.querySelector("#filter-error");
    this.keys = new Map(); // field -> {types, documents, samples}
    this.message = null; // [key, params] shown in this.error, said again on a language switch
    this.counter = 0;
    root.querySelector("#filter-add").addEventListener("click", () => this.addRow(true));
    root.addEventListener("input", () => this.update());
    root.addEventListener("change", () => this.update());
    this.update();
  }

  /** The fields known in kbId (none when it cannot be listed: typing a field still works). */
  async load(kbId) {
    this.keys = new Map();
    if (kbId) {
      try {
        const found = await api(`/api/kbs/${encodeURIComponent(kbId)}/metadata-keys`);
        for (const entry of found) this.keys.set(entry.key, entry);
        if (this.message?.[0] === "filter.error.keys") this.showError(null);
      } catch (failure) {
        this.showError("filter.error.keys", { reason: describe(failure) });
      }
    }
    this.renderKeys();
  }

  renderKeys() {
    this.keysList.replaceChildren(...[...this.keys.values()].map((entry) => h("option", {
      value: entry.key,
      label: t("filter.keyInfo", {
        types: entry.types.map((type) => t(`filter.type.${SUGGESTED[type] || "string"}`))
          .join(", "),
        samples: entry.samples.map(shownValue).join(", ") }),
    })));
    for (const row of this.rows.children) this.renderSamples(row);
  }

  addRow(focus = false) {
    this.counter += 1;
    const id = this.counter;
    const option = (value, key) => h("option", { value }, t(key));
    const field = h("input", { class: "filter-field", list: "filter-keys", autocomplete: "off",
      dataset: { part: "field" }, placeholder: t("filter.fieldPlaceholder") });
    const op = h("select", { dataset: { part: "op" } },
      OPERATORS.map((name) => option(name, `filter.op.${name}`)));
    const type = h("select", { dataset: { part: "type" } },
      TYPES.map((name) => option(name, `filter.type.${name}`)));
    const samples = h("datalist", { id: `filter-samples-${id}` });
    const remove = h("button", { type: "button", class: "secondary small",
      dataset: { part: "remove" } }, t("filter.remove"));
    const row = h("li", { class: "filter-row", dataset: { row: id } }, field, op, type,
      h("span", { class: "filter-value", dataset: { part: "value-box" } }), samples, remove);
    field.addEventListener("change", () => this.suggestType(row));
    op.addEventListener("change", () => this.renderValue(row));
    type.addEventListener("change", () => this.renderValue(row));
    remove.addEventListener("click", () => {
      const next = row.nextElementSibling || row.previousElementSibling;
      row.remove();
      this.relabelRows();
      this.update();
      (next ? next.querySelector("input") : this.root.querySelector("#filter-add")).focus();
    });
    this.rows.append(row);
    this.renderValue(row);
    this.relabelRows();
    this.update();
    if (focus) field.focus();
    return row;
  }

  /** A known field chosen: its type, and its samples offered as values. */
  suggestType(row) {
    const entry = this.keys.get(row.querySelector('[data-part="field"]').value.trim());
    if (entry && entry.types.length === 1) {
      row.querySelector('[data-part="type"]').value = SUGGESTED[entry.types[0]] || "string";
      this.renderValue(row);
    }
    this.renderSamples(row);
  }

  renderSamples(row) {
    const entry = this.keys.get(row.querySelector('[data-part="field"]').value.trim());
    row.querySelector("datalist").replaceChildren(...(entry ? entry.samples : [])
      .map((sample) => h("option", { value: shownValue(sample) })));
  }

  /** The value control fitting the operator and type: true/false for `is set` and booleans. */
  renderValue(row) {
    const op = row.querySelector('[data-part="op"]').value;
    const type = row.querySelector('[data-part="type"]');
    type.disabled = op === "exists" || op === "contains";
    if (op === "contains") type.value = "string";
    const box = row.querySelector('[data-part="value-box"]');
    const old = box.querySelector('[data-part="value"]');
    const boolean = op === "exists" || type.value === "boolean";
    if (old && (old.tagName === "SELECT") === boolean) {
      this.placeholder(old, op, type.value);
      return;
    }
    const value = boolean
      ? h("select", { dataset: { part: "value" } },
        h("option", { value: "true" }, t("filter.bool.true")),
        h("option", { value: "false" }, t("filter.bool.false")))
      : h("input", { dataset: { part: "value" }, autocomplete: "off",
        list: row.querySelector("datalist")?.id || `filter-samples-${row.dataset.row}` });
    this.placeholder(value, op, type.value);
    box.replaceChildren(value);
    this.relabelRows();
  }

  placeholder(value, op, type) {
    if (value.tagName === "SELECT") return;
    const key = LIST_OPS.has(op) || type === "list" ? "filter.placeholder.list"
      : type === "date" ? "filter.placeholder.date" : null;
    if (key) value.setAttribute("placeholder", t(key));
    else value.removeAttribute("placeholder");
    value.inputMode = type === "number" && !LIST_OPS.has(op) ? "decimal" : "text";
  }

  /** Every control's accessible name names its row ("Value of condition 2"). */
  relabelRows() {
    [...this.rows.children].forEach((row, index) => {
      const n = index + 1;
      for (const [part, key] of [["field", "filter.fieldLabel"], ["op", "filter.opLabel"],
        ["type", "filter.typeLabel"], ["value", "filter.valueLabel"],
        ["remove", "filter.removeLabel"]]) {
        row.querySelector(`[data-part="${part}"]`)?.setAttribute("aria-label", t(key, { n }));
      }
    });
  }

  /** {filter} (null: no condition) or {error: [key, params], input} for the first bad row. */
  value() {
    const conditions = [];
    for (const [index, row] of [...this.rows.children].entries()) {
      const n = index + 1;
      const get = (part) => row.querySelector(`[data-part="${part}"]`);
      const field = get("field").value.trim();
      const op = get("op").value;
      const type = get("type").value;
      const text = get("value").value.trim();
      // an untouched row (a true/false select always has a value)
      if (!field && (get("value").tagName === "SELECT" || !text)) continue;
      if (!field) return { error: ["filter.error.field", { n }], input: get("field") };
      let built;
      if (op === "exists") {
        built = { value: text === "true" };
      } else if (LIST_OPS.has(op)) {
        const items = text.split(",").map((item) => item.trim()).filter(Boolean);
        const typed = items.map((item) => operand(type === "list" ? "string" : type, item, n));
        built = typed.find((item) => item.error) || { value: typed.map((item) => item.value) };
      } else if (type === "list") {
        return { error: ["filter.error.listOp", { n }], input: get("op") };
      } else {
        built = operand(type, text, n);
      }
      if (!built.error && text === "" && op !== "exists" && type !== "boolean") {
        built = { error: ["filter.error.value", { n }] };
      }
      if (built.error) return { error: built.error, input: get("value") };
      conditions.push({ [field]: { [`$${op}`]: built.value } });
    }
    if (!conditions.length) return { filter: null };
    if (conditions.length === 1) return { filter: conditions[0] };
    return { filter: { [this.join.value]: conditions } };
  }

  /** Rows for `filter` (a history re-run): true when the editor can show it, false (the
   * editor left empty) for one it cannot build, e.g. a nested $not. */
  set(filter) {
    const rows = filter ? conditionsOf(filter) : { join: "$and", rows: [] };
    this.rows.replaceChildren();
    this.join.value = rows?.join || "$and";
    for (const condition of rows?.rows || []) {
      const row = this.addRow();
      const get = (part) => row.querySelector(`[data-part="${part}"]`);
      get("field").value = condition.field;
      get("op").value = condition.op;
      get("type").value = condition.type;
      this.renderValue(row);
      get("value").value = condition.text;
      this.renderSamples(row);
    }
    this.update();
    return rows !== null;
  }

  /** The JSON to be sent, shown as it is edited ("…" while a row is incomplete). */
  update() {
    const built = this.value();
    this.preview.textContent = built.error ? "…"
      : built.filter ? JSON.stringify(built.filter) : t("filter.jsonNone");
    for (const input of this.root.querySelectorAll("[aria-invalid]")) {
      if (!built.error || input !== built.input) input.removeAttribute("aria-invalid");
    }
  }

  /** Show a message (null: none) under the editor; a bad row's input is marked. */
  showError(key, params = {}, input = null) {
    this.message = key ? [key, params] : null;
    say(this.error, key ? t(key, params) : "");
    if (input) {
      input.setAttribute("aria-invalid", "true");
      input.focus();
    }
  }

  /** The editor's filter for a request (null: no condition), or undefined after showing why
   * it cannot be sent. */
  checked() {
    const built = this.value();
    if (built.error) {
      this.showError(...built.error, built.input);
      return undefined;
    }
    if (this.message?.[0] !== "filter.error.keys") this.showError(null);
    return built.filter;
  }

  /** A 400 the server gave about the filter: shown here (true), else false. */
  claims(failure) {
    if (failure?.status !== 400 || !/\bfilter\b/.test(String(failure.message))) return false;
    this.showError("filter.error.server", { reason: describe(failure) });
    this.error.scrollIntoView({ block: "nearest" });
    return true;
  }

  /** Another language: option texts, labels, the preview and a message said. */
  relabel() {
    for (const select of this.rows.querySelectorAll("select")) {
      for (const option of select.options) {
        const part = select.dataset.part;
        const key = part === "op" ? `filter.op.${option.value}`
          : part === "type" ? `filter.type.${option.value}` : `filter.bool.${option.value}`;
        option.textContent = t(key);
      }
    }
    for (const row of this.rows.children) {
      const field = row.querySelector('[data-part="field"]');
      field.placeholder = t("filter.fieldPlaceholder");
      row.querySelector('[data-part="remove"]').textContent = t("filter.remove");
      const value = row.querySelector('[data-part="value"]');
      this.placeholder(value, row.querySelector('[data-part="op"]').value,
        row.querySelector('[data-part="type"]').value);
    }
    this.relabelRows();
    this.renderKeys();
    this.update();
    if (this.message) say(this.error, t(...this.message));
  }
}
