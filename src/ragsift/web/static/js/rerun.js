// A query-history re-run on the debug page (retrieval testing, issue 38): every option a record
// kept goes back into the search form (mode, top k, the stage switches, fusion, min score,
// weights, KB version, document whitelist, metadata filter), so the re-run is the same search
// and what the form shows is what was sent. Options the form has no control for (a record
// made through the API, or a filter the editor cannot draw) are returned, to be sent with the
// re-run as they were.

const $ = (id) => document.getElementById(id);

const SWITCHES = [["rewrite", "rewrite"], ["rerank", "rerank"], ["small2big", "small2big"],
  ["auto-merge", "auto_merge"]];
const NUMBERS = [["top-k", "top_k"], ["min-score", "min_score"],
  ["dense-weight", "dense_weight"], ["sparse-weight", "sparse_weight"],
  ["kb-version", "kb_version"]];
// the options the form shows
const SHOWN = new Set(["mode", "fusion", "document_ids", "filter",
  ...SWITCHES.map(([, field]) => field), ...NUMBERS.map(([, field]) => field)]);

/** Put `record`'s query and options in the form; returns the options the form cannot show. */
export function restoreForm(record, { picker, filterEditor }) {
  const o = record.options || {};
  $("query").value = record.query;
  $("mode").value = o.mode || "hybrid";
  $("fusion").value = o.fusion || "";
  for (const [id, field] of SWITCHES) {
    // an option the record does not name was the server's: the page's default stands for it
    $(id).checked = typeof o[field] === "boolean" ? o[field] : $(id).defaultChecked;
  }
  for (const [id, field] of NUMBERS) {
    $(id).value = o[field] === undefined || o[field] === null ? $(id).defaultValue
      : String(o[field]);
  }
  picker.selected = new Set(o.document_ids || []);
  picker.render();
  const extra = Object.fromEntries(Object.entries(o).filter(([key]) => !SHOWN.has(key)));
  if (!filterEditor.set(o.filter || null)) extra.filter = o.filter;
  return extra;
}
