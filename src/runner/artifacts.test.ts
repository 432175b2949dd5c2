import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TaskArtifacts } from "./artifacts.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function artifacts(): { art: TaskArtifacts; read: () => Record<string, unknown>; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), "ratchet-artifacts-"));
  dirs.push(dir);
  const art = new TaskArtifacts(dir, "t");
  return { art, dir, read: () => JSON.parse(readFileSync(join(dir, "t.status.json"), "utf8")) };
}

describe("TaskArtifacts status writes", () => {
  it("status() alone is written before it returns", () => {
    const { art, read } = artifacts();
    art.status("passed", { rounds: 2 });
    expect(read()).toMatchObject({ state: "passed", rounds: 2 });
  });

  it("the final status given after progress writes is the one left, whatever the thread pool does", async () => {
    const { art, read, dir } = artifacts();
    art.status("preflight");
    for (let round = 1; round <= 20; round++) art.progress("running", { round });
    art.status("failed", { stop_reason: "max_rounds" });
    await art.settled();
    expect(read()).toMatchObject({ state: "failed", stop_reason: "max_rounds" });
    expect(readdirSync(dir).filter((n) => n.endsWith(".tmp"))).toEqual([]);
    // and with nothing in flight, status() is synchronous again
    art.status("passed");
    expect(read()).toMatchObject({ state: "passed" });
  });
});
