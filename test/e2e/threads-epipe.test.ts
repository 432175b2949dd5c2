/**
 * `ratchet thread watch` and `ratchet chat` with nobody reading their stdout (`… | head -1`): they
 * stop instead of running on silently — watch exits 0 at once on a thread that is still going, chat
 * ends although its stdin stays open. Real child processes of the built CLI; the read end of stdout
 * is closed right after spawning, so every write of the child fails with EPIPE.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { ThreadService } from "../../src/threads/index.js";
import { assertBuilt, BIN, childEnv, makeWorkspace, query, type TestWorkspace } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await makeWorkspace("ratchet-threads-epipe-");
});
afterAll(() => ws?.remove());

/** Runs `ratchet …args` with stdout closed at once and stdin left open; resolves when it exits. */
function closedStdout(args: readonly string[]): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ws.dir,
    env: childEnv(),
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdout.destroy();
  child.stdin.on("error", () => {});
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (c: string) => {
    stderr += c;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`ratchet ${args.join(" ")} kept running with its stdout closed`));
    }, 60_000);
    child.on("close", (status) => {
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ status, stderr });
    });
  });
}

const NO_TRACE = /EPIPE|Unhandled 'error' event|internal error|\n\s+at /;

describe("threads with a closed stdout", () => {
  it("`thread watch` of a thread still going stops at once with 0 (not its timeout's 8)", async () => {
    const store = SqliteStore.open(ws.dbPath);
    const id = (() => {
      try {
        return new ThreadService({ store, missions: false }).create("never driven").thread_id;
      } finally {
        store.close();
      }
    })();
    const r = await closedStdout(["thread", "watch", id, "--timeout", "50"]);
    expect(r.stderr).not.toMatch(NO_TRACE);
    expect(r.status).toBe(0);
    expect(
      query<{ state: string }>(ws, "SELECT state FROM threads WHERE thread_id = ?", id)[0]!.state,
    ).not.toBe("completed");
  });

  it("`chat` ends although its stdin stays open, exit 0", async () => {
    const r = await closedStdout(["chat"]);
    expect(r.stderr).not.toMatch(NO_TRACE);
    expect(r.status).toBe(0);
  });
});
