/**
 * Just enough RESP for the fault proxy: find where one request or one reply ends in a byte stream,
 * so the proxy can act on whole commands (drop this one, swallow that reply) without ever
 * forwarding half a frame. RESP2 and RESP3 reply types are understood; requests are the arrays of
 * bulk strings both clients send (inline commands are tolerated).
 */

/** Index just past the CRLF that ends the line starting at `from`, or -1 when not all here yet. */
function lineEnd(buf: Buffer, from: number): number {
  const cr = buf.indexOf('\r\n', from, 'latin1');
  return cr < 0 ? -1 : cr + 2;
}

function lineNumber(buf: Buffer, from: number, end: number): number {
  return Number(buf.toString('latin1', from + 1, end - 2));
}

/**
 * Where the reply starting at `offset` ends (exclusive), or -1 when it is not complete yet.
 * Recursive over aggregates; replies Locksmith sees are shallow.
 */
export function replyEnd(buf: Buffer, offset: number): number {
  if (offset >= buf.length) return -1;
  const type = String.fromCharCode(buf[offset] as number);
  const end = lineEnd(buf, offset);
  if (end < 0) return -1;
  switch (type) {
    case '+':
    case '-':
    case ':':
    case '_':
    case '#':
    case ',':
    case '(':
      return end;
    case '$':
    case '!':
    case '=': {
      const length = lineNumber(buf, offset, end);
      if (length < 0) return end;
      return buf.length >= end + length + 2 ? end + length + 2 : -1;
    }
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      const count = lineNumber(buf, offset, end);
      if (count < 0) return end;
      const elements = type === '%' || type === '|' ? count * 2 : count;
      let at = end;
      for (let i = 0; i < elements; i += 1) {
        at = replyEnd(buf, at);
        if (at < 0) return -1;
      }
      // An attribute (|) prefixes the reply it describes: that reply follows.
      return type === '|' ? replyEnd(buf, at) : at;
    }
    default:
      throw new Error(`RESP: unknown reply type byte ${JSON.stringify(type)} at ${offset}`);
  }
}

export interface ParsedRequest {
  /** Index just past the request. */
  readonly end: number;
  /** Its arguments (the command name first). */
  readonly args: string[];
}

/** Parses the request starting at `offset`, or returns undefined when it is not complete yet. */
export function parseRequest(buf: Buffer, offset: number): ParsedRequest | undefined {
  if (offset >= buf.length) return undefined;
  const end = lineEnd(buf, offset);
  if (end < 0) return undefined;
  if (buf[offset] !== 0x2a /* '*' */) {
    // Inline command (redis-cli style): whitespace-separated words on one line.
    const words = buf
      .toString('latin1', offset, end - 2)
      .trim()
      .split(/\s+/)
      .filter(Boolean);
    return { end, args: words };
  }
  const count = lineNumber(buf, offset, end);
  const args: string[] = [];
  let at = end;
  for (let i = 0; i < count; i += 1) {
    const headerEnd = lineEnd(buf, at);
    if (headerEnd < 0) return undefined;
    const length = lineNumber(buf, at, headerEnd);
    if (buf.length < headerEnd + length + 2) return undefined;
    // Only the command name and the first argument (a SHA or a script) matter to the proxy;
    // decoding the rest as latin1 is cheap and lossless enough for logging.
    args.push(buf.toString('latin1', headerEnd, headerEnd + length));
    at = headerEnd + length + 2;
  }
  return { end: at, args };
}
