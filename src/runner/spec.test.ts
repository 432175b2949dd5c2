import { describe, expect, it } from "vitest";
import { isRatchetError } from "../core/index.js";
import { parseAssertion, parseTaskSpec } from "./spec.js";

const base = {
  task_id: "t1",
  title: "Fix",
  prompt: "Fix it",
  backend: "codex",
  cwd: "/repo",
  output_dir: "/out",
  allowlist: ["./src/a.py", "src\\b.py", "tests/"],
  definition_of_done: { command: "pytest -q", assertion: "passed" },
};

function error(value: unknown): { field: unknown; message: string } {
  try {
    parseTaskSpec(value);
  } catch (e) {
    if (isRatchetError(e)) return { field: e.details.field, message: e.message };
    throw e;
  }
  throw new Error("no error");
}

describe("task spec", () => {
  it("applies defaults and normalises the allowlist", () => {
    const s = parseTaskSpec(base);
    expect(s.allowlist).toEqual(["src/a.py", "src/b.py", "tests"]);
    expect(s.max_rounds).toBe(5);
    expect(s.rollback_on_failure).toBe(true);
    expect(s.apply_to_source).toBe(false);
    expect(s.dirty_worktree_policy).toBe("isolated_worktree");
    expect(s.definition_of_done.timeout_seconds).toBe(300);
  });
  it("rejects unknown fields by name", () => {
    const e = error({ ...base, colour: "red" });
    expect(e.message).toContain("colour");
    expect(e.field).toBe("colour");
    expect(
      error({ ...base, definition_of_done: { command: "x", assertion: "y", extra: 1 } }).message,
    ).toContain("extra");
  });
  it.each([
    ["/etc/passwd", "absolute"],
    ["../x", '".."'],
    ["src/../../x", '".."'],
    [".git/config", ".git"],
    [".", "whole repository"],
  ])("refuses allowlist entry %j naming it", (entry, why) => {
    const e = error({ ...base, allowlist: ["ok.py", entry] });
    expect(e.message).toContain(JSON.stringify(entry));
    expect(e.message).toContain(why);
    expect(e.field).toBe("allowlist[1]");
  });
  it("takes writable_paths as absolute folders outside the source repository", () => {
    expect(parseTaskSpec(base).writable_paths).toEqual([]);
    expect(
      parseTaskSpec({ ...base, writable_paths: ["/cache/go", "/cache/go/", "/tmp/x"] }).writable_paths,
    ).toEqual(["/cache/go", "/tmp/x"]);
    expect(error({ ...base, writable_paths: ["/ok", "cache"] })).toMatchObject({
      field: "writable_paths[1]",
      message: expect.stringContaining("absolute"),
    });
    expect(error({ ...base, writable_paths: ["/repo/build"] })).toMatchObject({
      field: "writable_paths[0]",
      message: expect.stringContaining("inside the source repository"),
    });
    expect(error({ ...base, writable_paths: ["/repo"] }).field).toBe("writable_paths[0]");
    expect(error({ ...base, writable_paths: Array.from({ length: 33 }, (_, i) => `/c${i}`) }).field).toBe(
      "writable_paths",
    );
    expect(error({ ...base, writable_paths: ["/"] })).toMatchObject({
      field: "writable_paths[0]",
      message: expect.stringContaining("contains the source repository"),
    });
  });
  it("supports only the isolated_worktree policy", () => {
    expect(error({ ...base, dirty_worktree_policy: "in_place" }).field).toBe("dirty_worktree_policy");
  });
  it("parses assertions", () => {
    expect(parseAssertion("exit_code == 0")).toEqual({ kind: "exit_code", code: 0 });
    expect(parseAssertion("exit_code==3")).toEqual({ kind: "exit_code", code: 3 });
    expect(parseAssertion("passed")).toEqual({ kind: "substring", text: "passed" });
  });
});
