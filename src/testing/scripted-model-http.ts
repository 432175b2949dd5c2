/**
 * The HTTP plumbing of the scripted model: the request record, reading a bounded body, recording
 * headers without credentials, and writing a JSON reply.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** Largest request body the scripted model reads, in bytes (larger ones get a 413). */
export const MAX_SCRIPTED_REQUEST_BYTES = 16 * 1024 * 1024;

/** Request headers never recorded: they carry credentials. */
const SECRET_HEADERS = new Set(["authorization", "x-api-key", "api-key", "cookie", "proxy-authorization"]);

/** One request the scripted model received. */
export interface RecordedRequest {
  /** 1-based, in arrival order, over every recorded request. */
  n: number;
  method: string;
  /** The path with its query string. */
  path: string;
  /** Lower-case header names; `authorization`, `x-api-key` and cookies are left out. */
  headers: Record<string, string>;
  /** Whether the request carried an `Authorization` or `x-api-key` header (its value is not kept). */
  authorized: boolean;
  /** The body parsed as JSON; the raw text when it is not JSON; `null` when empty. */
  body: unknown;
  /** The turn that answered (its index), `"default"`, or `null` (no turn: an error reply). */
  turn: number | "default" | null;
  /** The HTTP status sent. */
  status: number;
  /** The client went away before the reply was complete. */
  aborted: boolean;
}

/** A body over {@link MAX_SCRIPTED_REQUEST_BYTES}. */
export class BodyTooLarge extends Error {}

/** The body as text; throws {@link BodyTooLarge} past the limit. */
export async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const piece of req) {
    size += (piece as Buffer).length;
    if (size > MAX_SCRIPTED_REQUEST_BYTES) throw new BodyTooLarge();
    parts.push(piece as Buffer);
  }
  return Buffer.concat(parts).toString("utf8");
}

/** JSON when it parses, else the raw text; `null` when empty. */
export function parseBody(text: string): unknown {
  if (text === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** The request's headers without credentials (`authorization`, `x-api-key`, cookies). */
export function recordedHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (!SECRET_HEADERS.has(k) && v !== undefined) headers[k] = Array.isArray(v) ? v.join(", ") : v;
  }
  return headers;
}
