// Calls to the ragsift API; every failure becomes an ApiError carrying the server's
// {code, message} (or the HTTP status when the body is not that shape). What the page shows is
// describe(): a sentence in the page's language for the codes the catalogue knows (the
// server's own message where it says what exactly is wrong), never a raw code or id.
//
// Every call carries the tab's API key (auth.js) as `Authorization: Bearer …` once one is
// stored. A 401 asks for a key in a dialog and retries the request once with it; a key the
// server refuses again is forgotten and asked for again, with the server's reason. A 403 (the
// key's role or scope does not allow the request) is an ApiError like any other: the page shows
// the server's message. With access control off no 401 comes, and no dialog ever shows.
import { askForKey, forgetKey, storedKey } from "./auth.js";
import { t } from "./i18n.js";
import "./strings/common.js";

// quoted ids in server messages ('3f2a…' uuids, long hex or token-like ids) are not for people
const QUOTED_ID = /(['"])(?:[0-9a-f]{8}-[0-9a-f-]{27,}|[0-9a-f]{16,}|[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*_[A-Za-z0-9_-]{12,}|[A-Za-z0-9]{24,})\1/g;

/** A server message without its raw ids ('…' in their place). */
export function withoutIds(message) {
  return String(message || "").replace(QUOTED_ID, t("common.error.id"));
}

export class ApiError extends Error {
  constructor(status, code, message, retryAfter = null, serverMessage = false) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
    this.serverMessage = serverMessage; // `message` is the server's (not the status line)
  }

  /** The error in words, in the page's language; a 429 also says when to retry. */
  describe() {
    let text;
    const known = `common.error.code.${this.code}`;
    const detail = withoutIds(this.message);
    if (this.code === "network_error") text = t("common.error.network");
    else if (t(known) !== known) text = t(known, { detail });
    else if (this.serverMessage) text = t("common.error.serverSays", { message: detail });
    else text = t("common.error.http", { status: this.status });
    return this.retryAfter ? t("common.error.retry", { message: text, seconds: this.retryAfter })
      : text;
  }
}

/** The ApiError for a non-2xx response. */
export async function errorFrom(response) {
  let code = `http_${response.status}`;
  let message = `${response.status} ${response.statusText || "request failed"}`;
  let fromServer = false;
  try {
    const body = await response.json();
    if (body && typeof body.code === "string") {
      code = body.code;
      if (typeof body.message === "string" && body.message) {
        message = body.message;
        fromServer = true;
      }
    }
  } catch {
    // not JSON: keep the status line
  }
  const retryAfter = response.status === 429 ? response.headers.get("retry-after") : null;
  return new ApiError(response.status, code, message, retryAfter, fromServer);
}

async function send(path, init, key) {
  const headers = new Headers(init.headers);
  if (key) headers.set("authorization", `Bearer ${key}`);
  try {
    return await fetch(path, { ...init, headers });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "network_error", String(error.message)); // described in words
  }
}

/**
 * fetch with the tab's API key: the Response of any status but 401 (the caller reads it, e.g.
 * as an event stream). On a 401 the key dialog opens; cancelling it throws the 401's ApiError.
 * `init.body` must be re-sendable (a string or FormData, not a stream).
 */
export async function request(path, init = {}) {
  let key = storedKey();
  for (;;) {
    const response = await send(path, init, key);
    if (response.status !== 401) return response;
    const refused = await errorFrom(response);
    const current = storedKey();
    if (current && current !== key) { // another request got a new key meanwhile: use it
      key = current;
      continue;
    }
    if (key) forgetKey(key);
    const entered = await askForKey(key
      ? t("common.key.refused", { reason: withoutIds(refused.message) }) : "");
    if (!entered) throw refused;
    key = entered;
  }
}

/** fetch + JSON: `json` is sent as a JSON body, `body` as is (FormData); 204 gives null. */
export async function api(path, { method = "GET", json, body, signal } = {}) {
  const init = { method, signal, headers: { accept: "application/json" } };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers["content-type"] = "application/json";
  } else if (body !== undefined) {
    init.body = body;
  }
  const response = await request(path, init);
  if (!response.ok) throw await errorFrom(response);
  if (response.status === 204) return null;
  return response.json();
}

/** A readable message for any error thrown by api(), in the page's language. */
export function describe(error) {
  if (error instanceof ApiError) return error.describe();
  return t("common.error.unknown", { detail: String((error && error.message) || error) });
}
