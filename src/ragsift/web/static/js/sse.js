// Server-sent events over fetch: EventSource cannot POST, so the body stream is parsed here
// (the subset of the SSE format servers send: event, data, comments; CRLF, CR or LF lines).

/** One event block ("event: x\ndata: {...}") -> {event, data}, or null without data. */
export function parseBlock(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") event = value;
    else if (name === "data") data.push(value);
  }
  return data.length ? { event, data: data.join("\n") } : null;
}

/**
 * Split decoded text chunks into event blocks; feed() returns the complete events so far.
 * A trailing CR is held back, since its LF may arrive in the next chunk.
 */
export class SseParser {
  constructor() {
    this.buffer = "";
  }

  feed(text) {
    let buffer = this.buffer + text;
    const heldCR = buffer.endsWith("\r");
    if (heldCR) buffer = buffer.slice(0, -1);
    buffer = buffer.replace(/\r\n?/g, "\n");
    const events = [];
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const parsed = parseBlock(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (parsed) events.push(parsed);
    }
    this.buffer = heldCR ? `${buffer}\r` : buffer;
    return events;
  }
}

/** Every event of a fetch Response body, as {event, data} with data JSON-decoded. */
export async function* readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      for (const { event, data } of parser.feed(value)) yield { event, data: JSON.parse(data) };
    }
  } finally {
    reader.releaseLock();
  }
}
