// The FAQ endpoints this server has, read from its OpenAPI document (always served): the
// import (POST /api/kbs/{kb_id}/faq) is there on every server; listing, updating and deleting
// entries (under /api/kbs/{kb_id}/faq/...) may not be, and the FAQ page offers only what is.
import { api, request } from "./api.js";

const LIST_PATH = /^\/api\/kbs\/\{[^}]+\}\/faq$/;
const ENTRY_PATH = /^\/api\/(kbs\/\{[^}]+\}\/)?faq\/\{[^}]+\}$/;

/** Fill a path template: `{kb_id}` (any name with "kb") gets the KB, the other the entry. */
function fill(template, kbId, entryId = "") {
  return template.replace(/\{([^}]+)\}/g, (_, name) =>
    encodeURIComponent(/kb/i.test(name) ? kbId : entryId));
}

function queryParams(operation) {
  return new Set((operation.parameters || []).filter((p) => p.in === "query").map((p) => p.name));
}

function limitMaximum(operation) {
  const param = (operation.parameters || []).find((p) => p.in === "query" && p.name === "limit");
  const maximum = param && param.schema && param.schema.maximum;
  return Number.isInteger(maximum) && maximum > 0 ? Math.min(maximum, 500) : 200;
}

/** The entries of a list answer: an array, or the first array field of an object. */
function entriesOf(answer) {
  if (Array.isArray(answer)) return { entries: answer, total: answer.length };
  const field = Object.values(answer || {}).find(Array.isArray) || [];
  const total = Number.isInteger(answer && answer.total) ? answer.total : null;
  return { entries: field, total };
}

/** One entry of the server, whatever its id field is called. */
export function normalizeEntry(raw) {
  return { ...raw, id: raw.id ?? raw.faq_id ?? raw.entry_id };
}

export class FaqApi {
  constructor(paths = {}) {
    this.listPath = null;
    this.listParams = new Set();
    this.listLimit = 200;
    this.entryPath = null;
    this.updateMethod = null;
    this.canDelete = false;
    for (const [path, operations] of Object.entries(paths)) {
      if (LIST_PATH.test(path) && operations.get) {
        this.listPath = path;
        this.listParams = queryParams(operations.get);
        this.listLimit = limitMaximum(operations.get);
      }
      if (ENTRY_PATH.test(path) && (operations.patch || operations.put || operations.delete)) {
        this.entryPath = path;
        this.updateMethod = operations.patch ? "PATCH" : operations.put ? "PUT" : null;
        this.canDelete = Boolean(operations.delete);
      }
    }
  }

  /** Read /openapi.json; a server that does not serve it gets the import only. */
  static async discover() {
    try {
      const response = await request("/openapi.json", { headers: { accept: "application/json" } });
      if (!response.ok) return new FaqApi();
      const document = await response.json();
      return new FaqApi(document.paths || {});
    } catch {
      return new FaqApi();
    }
  }

  get canList() { return this.listPath !== null; }
  get canUpdate() { return this.entryPath !== null && this.updateMethod !== null; }

  /** Every entry of the KB, page by page when the endpoint pages (at most `cap`). */
  async list(kbId, cap = 5000) {
    const base = fill(this.listPath, kbId);
    if (!this.listParams.has("limit")) return entriesOf(await api(base)).entries.map(normalizeEntry);
    const all = [];
    for (let offset = 0; all.length < cap;) {
      const limit = this.listLimit;
      const page = entriesOf(await api(`${base}?offset=${offset}&limit=${limit}`));
      all.push(...page.entries);
      offset += page.entries.length;
      if (!page.entries.length || (page.total !== null ? offset >= page.total
        : page.entries.length < limit)) break;
    }
    return all.map(normalizeEntry);
  }

  update(kbId, entryId, changes) {
    return api(fill(this.entryPath, kbId, entryId), { method: this.updateMethod, json: changes });
  }

  remove(kbId, entryId) {
    return api(fill(this.entryPath, kbId, entryId), { method: "DELETE" });
  }

  /** POST /api/kbs/{kb_id}/faq with a JSONL or CSV file: {rows, added, duplicates}. */
  static importFile(kbId, file) {
    const form = new FormData();
    form.append("file", file, file.name);
    return api(`/api/kbs/${encodeURIComponent(kbId)}/faq`, { method: "POST", body: form });
  }

  /** FAQ entries like `query` (the FAQ channel of /api/retrieval/explain, at most 50). */
  static async search(kbId, query) {
    const out = await api("/api/retrieval/explain", { method: "POST", json: {
      kb_id: kbId, query, run_doc: false, run_faq: true, faq_top_k: 50, rewrite: false,
      rerank: false,
    } });
    return out.faq.map((hit) => normalizeEntry({ ...hit, id: hit.faq_id }));
  }
}
