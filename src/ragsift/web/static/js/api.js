// JSON calls to the ragsift API; every failure becomes an ApiError carrying the server's
// {code, message} (or the HTTP status when the body is not that shape).

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }

  /** "message (code)" for display. */
  describe() {
    return this.code ? `${this.message} (${this.code})` : this.message;
  }
}

/** The ApiError for a non-2xx response. */
export async function errorFrom(response) {
  let code = `http_${response.status}`;
  let message = `${response.status} ${response.statusText || "request failed"}`;
  try {
    const body = await response.json();
    if (body && typeof body.code === "string") {
      code = body.code;
      if (typeof body.message === "string" && body.message) message = body.message;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message);
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
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "network_error", `the server could not be reached (${error.message})`);
  }
  if (!response.ok) throw await errorFrom(response);
  if (response.status === 204) return null;
  return response.json();
}

/** A readable message for any error thrown by api(). */
export function describe(error) {
  return error instanceof ApiError ? error.describe() : String(error.message || error);
}
