// A document's metadata on the documents page (issue 36): a short line under the file name and
// a dialog that edits it as JSON and saves it with PATCH /api/documents/{id} (replace: the
// object shown is the whole metadata; nothing is re-embedded). The server's 400 (a reserved or
// invalid key, a value of no metadata type) stays in the dialog with its words.
import { api, ApiError } from "./api.js";
import { openDialog } from "./dialog.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import "./strings/documents.js";

/** One value as text: a tagged date as its ISO text, a list as "a, b". */
function shown(value) {
  if (Array.isArray(value)) return value.join(", ");
  if (value && typeof value === "object") return String(value.$date ?? value.$datetime ?? "");
  return String(value);
}

/** "dept: hr · year: 2024" for a document with metadata, else "". */
export function metadataText(doc) {
  return Object.entries(doc.metadata || {}).map(([key, value]) => `${key}: ${shown(value)}`)
    .join(" · ");
}

/** The line under the file name (null without metadata). */
export function metadataLine(doc) {
  const text = metadataText(doc);
  return text ? h("p", { class: "doc-meta small muted", dataset: { part: "metadata" },
    title: t("documents.meta.rowLabel") }, text) : null;
}

function parsed(text) {
  let value;
  try {
    value = JSON.parse(text.trim() || "{}");
  } catch (error) {
    throw new ApiError(400, "invalid_input", t("documents.meta.badJson", { reason: error.message }),
      null, true);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    throw new ApiError(400, "invalid_input", t("documents.meta.notObject"), null, true);
  }
  return value;
}

/** Edit doc's metadata in a dialog: the saved document, or null when cancelled. */
export function editMetadata(doc, url) {
  const area = h("textarea", { id: "metadata-json", rows: 8, spellcheck: "false",
    class: "mono" });
  area.value = JSON.stringify(doc.metadata || {}, null, 2);
  return openDialog({
    name: "metadata",
    title: t("documents.meta.title", { name: doc.filename }),
    description: t("documents.meta.description"),
    fields: [h("label", { for: "metadata-json" }, t("documents.meta.field"), area)],
    submitLabel: t("documents.meta.submit"),
    submit: () => api(url, { method: "PATCH",
      json: { metadata: parsed(area.value), replace: true } }),
  });
}
