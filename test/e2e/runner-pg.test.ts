/**
 * `ratchet runner run` on a PostgreSQL store: the task's events land in the shared database (read
 * back from another session), exactly as they land in the SQLite file; a bad spec still exits 2 and
 * writes nothing there.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { PgStore } from "../../src/store/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { type PgCluster, startPgCluster } from "../harness/pg.js";
import { assertBuilt, ratchet } from "../helpers/cli.js";
import { calcSpec, fixTurns, GIT_IDENTITY, makeRepo } from "../helpers/runner-repo.js";

vi.setConfig({ testTimeout: 120_000 });
let cluster: PgCluster;
beforeAll(async () => {
  assertBuilt();
  cluster = await startPgCluster();
}, 120_000);
afterAll(() => cluster?.stop());

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("ratchet runner on PostgreSQL", () => {
  it("a passing task records its events in the shared database; a bad spec exits 2 and records nothing", async () => {
    const url = cluster.createDatabase();
    const r = makeRepo();
    cleanups.push(() => r.remove());
    const spec = join(r.root, "task.json");
    writeFileSync(spec, JSON.stringify(calcSpec(r)));
    const model = await startScriptedModel({ script: { turns: fixTurns() } });
    cleanups.push(() => model.close());
    const env = {
      ...GIT_IDENTITY,
      RATCHET_DB: url,
      RATCHET_MODEL: "openai-compatible:scripted",
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: "sk-test-0000000000",
    };
    const res = await ratchet(["runner", "run", spec, "--json"], { cwd: r.root, env });
    expect(res.status, res.stderr).toBe(0);
    expect((JSON.parse(res.stdout) as { status: string }).status).toBe("passed");

    const reader = PgStore.open(url);
    try {
      const types = reader.sql
        .all<{ type: string }>(
          "SELECT type FROM events WHERE entity_kind = 'runner_task' AND entity_id = ? ORDER BY id",
          ["fix-calc"],
        )
        .map((e) => e.type);
      expect(types[0]).toBe("runner.task_started");
      expect(types.at(-1)).toBe("runner.task_finished");
      const before = reader.lastEventId();
      writeFileSync(spec, JSON.stringify({ ...calcSpec(r), surprise: 1 }));
      const bad = await ratchet(["runner", "run", spec], { cwd: r.root, env });
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain("surprise");
      expect(reader.lastEventId()).toBe(before);
    } finally {
      reader.close();
    }
  });
});
