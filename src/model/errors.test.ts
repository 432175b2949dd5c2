import { describe, expect, it } from "vitest";
import { RatchetError } from "../core/index.js";
import {
  errorCodeForModelKind,
  kindForStatus,
  ModelError,
  ModelErrorKind,
  parseRetryAfter,
  retryDelayMs,
} from "./errors.js";

describe("ModelError", () => {
  it("pins the kinds, their core codes and whether they are retried", () => {
    const table = Object.values(ModelErrorKind).map((kind) => [
      kind,
      errorCodeForModelKind(kind),
      new ModelError(kind, "x").retryable,
    ]);
    expect(table).toEqual([
      ["rate_limited", "work_failed", true],
      ["server_error", "work_failed", true],
      ["connection", "work_failed", true],
      ["timeout", "timeout", false],
      ["cancelled", "cancelled", false],
      ["incomplete_stream", "work_failed", false],
      ["bad_request", "invalid_value", false],
      ["auth", "invalid_value", false],
    ]);
  });

  it("is a RatchetError with typed fields in its JSON", () => {
    const err = new ModelError("rate_limited", "slow down", {
      model: "openai:m",
      status: 429,
      retryAfterMs: 2000,
      attempts: 3,
    });
    expect(err).toBeInstanceOf(RatchetError);
    expect(err).toMatchObject({
      kind: "rate_limited",
      status: 429,
      retryAfterMs: 2000,
      attempts: 3,
      exitStatus: 8,
    });
    expect(err.toJSON()).toEqual({
      code: "work_failed",
      message: "slow down",
      kind: "rate_limited",
      model: "openai:m",
      status: 429,
      retryAfterMs: 2000,
      attempts: 3,
    });
  });

  it("maps HTTP statuses to kinds", () => {
    expect([400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503].map(kindForStatus)).toEqual([
      "bad_request",
      "auth",
      "auth",
      "bad_request",
      "server_error",
      "server_error",
      "bad_request",
      "bad_request",
      "rate_limited",
      "server_error",
      "server_error",
      "server_error",
    ]);
  });
});

describe("retry timing", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");

  it("reads Retry-After as seconds, as an HTTP date, and retry-after-ms first", () => {
    expect(parseRetryAfter({ "retry-after": "2" }, now)).toBe(2000);
    expect(parseRetryAfter({ "retry-after": "0.5" }, now)).toBe(500);
    expect(parseRetryAfter({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }, now)).toBe(5000);
    expect(parseRetryAfter({ "retry-after": "Wed, 31 Dec 2025 00:00:00 GMT" }, now)).toBe(0);
    expect(parseRetryAfter({ "retry-after-ms": "250", "retry-after": "9" }, now)).toBe(250);
    expect(parseRetryAfter({ "retry-after": "soon" }, now)).toBeUndefined();
    expect(parseRetryAfter({}, now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it("backs off exponentially up to the cap, unless the server said when", () => {
    const opts = { baseDelayMs: 1000, maxDelayMs: 5000 };
    expect([1, 2, 3, 4].map((a) => retryDelayMs(a, undefined, opts))).toEqual([1000, 2000, 4000, 5000]);
    expect(retryDelayMs(3, 1500, opts)).toBe(1500);
  });
});
