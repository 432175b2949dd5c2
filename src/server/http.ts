/**
 * The one mapping from errors to HTTP replies, body and query parsing, and keyset cursors.
 * Error bodies: `{ok:false, error:{code, message, field?}}`; write flows add their tail `marker`.
 */
import type { Context, MiddlewareHandler } from "hono";
import {
  assertNoForbiddenKeys,
  decodeUtf8Strict,
  ErrorCode,
  httpStatusFor,
  RatchetError,
  toRatchetError,
} from "../core/index.js";
import { DEFAULT_PAGE_SIZE, MAX_BODY_BYTES, MAX_PAGE_SIZE } from "./limits.js";

/** Codes only the server uses, beside the core's. */
export const ServerErrorCode = {
  Unauthorized: "unauthorized",
  ReadOnly: "read_only",
  TooLarge: "body_too_large",
  /** The `Host` header names no host this server answers (DNS rebinding). */
  HostNotAllowed: "host_not_allowed",
  /** The `Origin` header of a write or an MCP request is a foreign page. */
  OriginNotAllowed: "origin_not_allowed",
} as const;

const SERVER_STATUS: Record<string, number> = {
  unauthorized: 401,
  read_only: 403,
  origin_not_allowed: 403,
  body_too_large: 413,
  host_not_allowed: 421,
};

/** The HTTP status of an error code (core codes through `httpStatusFor`). */
export function statusOf(code: string): number {
  return SERVER_STATUS[code] ?? httpStatusFor(code);
}

export function errorBody(code: string, message: string, field?: unknown): Record<string, unknown> {
  return {
    ok: false,
    error: { code, message, ...(typeof field === "string" ? { field } : {}) },
  };
}

/** Replies with the error's status and body. Internal errors keep their message out of the reply. */
export function replyError(c: Context, e: unknown, extra: Record<string, unknown> = {}): Response {
  const err = toRatchetError(e);
  const status = statusOf(err.code);
  const message = err.code === ErrorCode.Internal ? "internal error (see the server log)" : err.message;
  if (err.code === ErrorCode.Internal) console.error(`ratchet serve: ${err.stack ?? err.message}`);
  return c.json({ ...errorBody(err.code, message, err.details.field), ...extra }, status as 400);
}

export function replyCode(c: Context, code: string, message: string, field?: string): Response {
  const headers: Record<string, string> =
    code === ServerErrorCode.Unauthorized ? { "WWW-Authenticate": 'Bearer realm="ratchet"' } : {};
  return c.json(errorBody(code, message, field), statusOf(code) as 400, headers);
}

/**
 * Reads a JSON body; an empty body is `{}` when `allowEmpty`. Invalid UTF-8 and `__proto__`,
 * `constructor` or `prototype` keys anywhere are refused.
 * @throws `malformed_input` (400, field `body`); `schema_violation` (400) naming the key's path.
 */
export async function readJsonBody(c: Context, allowEmpty = false): Promise<unknown> {
  const text = decodeUtf8Strict(new Uint8Array(await c.req.arrayBuffer()), "the request body", "body");
  if (text.trim() === "") {
    if (allowEmpty) return {};
    throw new RatchetError(ErrorCode.MalformedInput, "the request body is empty: send a JSON object", {
      field: "body",
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (e) {
    throw new RatchetError(ErrorCode.MalformedInput, `the body is not valid JSON: ${(e as Error).message}`, {
      field: "body",
    });
  }
  assertNoForbiddenKeys(value);
  return value;
}

/**
 * `?limit=` (a query string) or an MCP tool's `limit` (a number): 1..MAX_PAGE_SIZE, absent means
 * DEFAULT_PAGE_SIZE. One rule for both edges. @throws `usage` naming `limit`.
 */
export function pageSize(raw: unknown): number {
  if (raw === undefined) return DEFAULT_PAGE_SIZE;
  const n =
    typeof raw === "number" ? raw : typeof raw === "string" && raw.trim() !== "" ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE)
    throw new RatchetError(
      ErrorCode.Usage,
      `limit must be an integer from 1 to ${MAX_PAGE_SIZE} (got ${typeof raw === "string" ? raw : JSON.stringify(raw)})`,
      {
        field: "limit",
      },
    );
  return n;
}

/** An opaque cursor: the sort key of the last row of a page, base64url JSON. */
export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

/** @throws `usage` naming `cursor` for anything that is not a cursor of `arity` strings/numbers. */
export function decodeCursor(raw: string | undefined, arity: number): (string | number)[] | undefined {
  if (raw === undefined || raw === "") return undefined;
  try {
    const v = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) as unknown;
    if (
      Array.isArray(v) &&
      v.length === arity &&
      v.every((x) => typeof x === "string" || typeof x === "number")
    )
      return v as (string | number)[];
  } catch {
    // fall through
  }
  throw new RatchetError(ErrorCode.Usage, "cursor is not a cursor this endpoint returned", {
    field: "cursor",
  });
}

/** A page of a keyset-paginated list. */
export interface Page<T> {
  items: T[];
  /** Pass as `?cursor=` for the next page; null on the last page. */
  next_cursor: string | null;
}

/** Builds a page from `limit + 1` fetched rows. */
export function page<T>(rows: T[], limit: number, key: (row: T) => (string | number)[]): Page<T> {
  const more = rows.length > limit;
  const items = more ? rows.slice(0, limit) : rows;
  const last = items[items.length - 1];
  return { items, next_cursor: more && last !== undefined ? encodeCursor(key(last)) : null };
}

/** An enumerated query parameter. @throws `usage` naming it. */
export function oneOfParam<T extends string>(
  name: string,
  raw: unknown,
  allowed: readonly T[],
): T | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (typeof raw !== "string" || !(allowed as readonly string[]).includes(raw))
    throw new RatchetError(
      ErrorCode.Usage,
      `${name} must be one of ${allowed.join(", ")} (got ${typeof raw === "string" ? raw : JSON.stringify(raw)})`,
      {
        field: name,
      },
    );
  return raw as T;
}

/**
 * An optional text parameter (a query value, or an MCP argument that must be a string): empty is
 * absent. @throws `usage` naming it when it is not a string.
 */
export function stringParam(name: string, raw: unknown): string | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (typeof raw !== "string")
    throw new RatchetError(ErrorCode.Usage, `${name} must be a string (got ${JSON.stringify(raw)})`, {
      field: name,
    });
  return raw;
}

/**
 * The body size limit of writes and `/mcp`: 413 `body_too_large` past {@link MAX_BODY_BYTES}.
 * A body with a `Content-Length` (and no `Transfer-Encoding`) is judged by that header alone, as
 * hono's `bodyLimit` does, but without touching `c.req.raw.body`: on `@hono/node-server` that
 * getter builds a full web `Request` and stream around the socket on every request, while reading
 * the body later through `c.req.arrayBuffer()` takes the adapter's direct path. Node's HTTP parser
 * holds the body to its declared length. Any other body (chunked) is counted as it arrives and
 * refused once past the bound; under it, the request is rebuilt around the bytes read (hono's own
 * `bodyLimit` rebuilt it from the adapter's request object, which failed with a 500).
 */
export function writeBodyLimit<E extends { Variables: object }>(): MiddlewareHandler<E> {
  const onError = (c: Context) =>
    replyCode(c, ServerErrorCode.TooLarge, `the body is larger than ${MAX_BODY_BYTES} bytes`, "body");
  return async (c, next) => {
    const length = c.req.header("content-length");
    if (length !== undefined && c.req.header("transfer-encoding") === undefined)
      return Number.parseInt(length, 10) > MAX_BODY_BYTES ? onError(c) : next();
    const raw = c.req.raw;
    if (!raw.body) return next();
    const reader = raw.body.getReader();
    const parts: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > MAX_BODY_BYTES) {
        await reader.cancel().catch(() => undefined);
        return onError(c);
      }
      parts.push(value);
    }
    c.req.raw = new Request(raw.url, {
      method: raw.method,
      headers: raw.headers,
      body: Buffer.concat(parts, size),
      signal: raw.signal,
    });
    return next();
  };
}
