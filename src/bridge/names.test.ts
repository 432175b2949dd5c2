import { describe, expect, it } from "vitest";
import { ErrorCode, exitStatusFor } from "../core/index.js";
import { BridgeError, BridgeErrorKind, errorCodeForKind, statusForKind } from "./errors.js";
import { anyToolOfServerAllowed, isAllowed, parseToolName, qualifiedName, toolRoute } from "./names.js";
import { Semaphore } from "./semaphore.js";

describe("tool names", () => {
  it("parses every accepted spelling", () => {
    expect(parseToolName("mcp:fx/add")).toEqual({ kind: "mcp", server: "fx", tool: "add" });
    expect(parseToolName("fx/add")).toEqual({ kind: "mcp", server: "fx", tool: "add" });
    expect(parseToolName("custom:echo")).toEqual({ kind: "custom", tool: "echo" });
    expect(parseToolName(" echo ")).toEqual({ kind: "custom", tool: "echo" });
    for (const bad of ["", "mcp:add", "a/b/c", "/x", "x/", "custom:a/b"])
      expect(() => parseToolName(bad), bad).toThrow(BridgeError);
  });

  it("prints canonical names and routes", () => {
    expect(qualifiedName({ kind: "mcp", server: "fx", tool: "add" })).toBe("mcp:fx/add");
    expect(qualifiedName({ kind: "custom", tool: "echo" })).toBe("custom:echo");
    expect(toolRoute({ kind: "mcp", server: "fx", tool: "add" })).toBe("/tools/mcp/fx/add");
    expect(toolRoute({ kind: "custom", tool: "echo" })).toBe("/tools/custom/echo");
  });
});

describe("allowlist", () => {
  const add = { kind: "mcp", server: "fx", tool: "add" } as const;
  const other = { kind: "mcp", server: "gh", tool: "add" } as const;
  const echo = { kind: "custom", tool: "echo" } as const;

  it("allows everything without a list and nothing with an empty one", () => {
    expect(isAllowed(undefined, add)).toBe(true);
    expect(isAllowed([], add)).toBe(false);
  });

  it("matches exact names, short spellings and wildcards", () => {
    expect(isAllowed(["mcp:fx/add"], add)).toBe(true);
    expect(isAllowed(["fx/add"], add)).toBe(true);
    expect(isAllowed(["mcp:fx/*"], add)).toBe(true);
    expect(isAllowed(["fx/*"], add)).toBe(true);
    expect(isAllowed(["mcp:fx/*"], other)).toBe(false);
    expect(isAllowed(["mcp:*"], other)).toBe(true);
    expect(isAllowed(["*"], echo)).toBe(true);
    expect(isAllowed(["custom:echo"], echo)).toBe(true);
    expect(isAllowed(["echo"], echo)).toBe(true);
    expect(isAllowed(["custom:echo"], add)).toBe(false);
    expect(isAllowed(["mcp:fx/ad"], add)).toBe(false);
  });

  it("knows when no tool of a server can be allowed", () => {
    expect(anyToolOfServerAllowed(["mcp:fx/add"], "fx")).toBe(true);
    expect(anyToolOfServerAllowed(["mcp:fx/*"], "fx")).toBe(true);
    expect(anyToolOfServerAllowed(["mcp:*"], "fx")).toBe(true);
    expect(anyToolOfServerAllowed(["custom:echo", "mcp:gh/*"], "fx")).toBe(false);
    expect(anyToolOfServerAllowed(["mcp:f*"], "fx")).toBe(true);
  });
});

describe("failure kinds (pinned: wire contract)", () => {
  it("maps each kind to its HTTP status and exit status", () => {
    const table = Object.values(BridgeErrorKind).map((k) => [
      k,
      statusForKind(k),
      exitStatusFor(errorCodeForKind(k)),
    ]);
    expect(table).toEqual([
      ["bad_request", 400, 2],
      ["unauthorized", 401, 2],
      ["forbidden", 403, 2],
      ["not_found", 404, 3],
      ["tool_failed", 422, 8],
      ["unavailable", 502, 8],
      ["timeout", 504, 8],
      ["cancelled", 499, 8],
      ["internal", 500, 1],
    ]);
    expect(errorCodeForKind("timeout")).toBe(ErrorCode.Timeout);
  });

  it("says which failures are ambiguous", () => {
    expect(new BridgeError("timeout", "x").ambiguous).toBe(true);
    expect(new BridgeError("bad_request", "x").ambiguous).toBe(false);
  });
});

describe("Semaphore", () => {
  it("grants in order and lets a waiter give up", async () => {
    const s = new Semaphore(1);
    const r1 = await s.acquire();
    const order: string[] = [];
    const ac = new AbortController();
    const p2 = s.acquire(ac.signal).then(
      () => order.push("2"),
      () => order.push("2-gave-up"),
    );
    const p3 = s.acquire().then((release) => {
      order.push("3");
      release();
    });
    expect(s.waiting).toBe(2);
    ac.abort(new Error("bye"));
    await p2;
    r1();
    r1(); // a second release does nothing
    await p3;
    expect(order).toEqual(["2-gave-up", "3"]);
    expect(s.inUse).toBe(0);
  });
});
