/**
 * Escape class: untrusted code reads Ratchet's own environment through `/proc` (issue 13 item 5).
 * A learned Python script, a learned JS script, a runner command and a script started by
 * `POST /api/runs` of a real `ratchet serve` walk their parent chain and every `/proc/<pid>` for a
 * fake model API key / the server token set in Ratchet's environment. None may find it, and the
 * value must land nowhere in the workspace (store, logs, blobs, outputs) or the runner's events.
 *
 * Enforced by `ratchet-confine` v2 (`--read` roots without `/proc`, `--proc-self`): fails against
 * the v1 binary, which confines writes only.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { assertBuilt, ratchet, startRatchet, type TestWorkspace } from "../helpers/cli.js";
import { calcSpec, GIT_IDENTITY, makeRepo } from "../helpers/runner-repo.js";
import {
  attackWorkflow,
  filesContaining,
  found,
  JS_PROC_SCAN,
  PY_PROC_SCAN,
  runJson,
  workspace,
} from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const FAKE_KEY = "sk-fake-proc-environ-7c1e55aa90";
const MARKER = "marker-proc-environ-5d2f7a0c31";
const SERVER_TOKEN = "srv-token-proc-environ-0b9d44ee12";

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-proc-");
});
afterAll(() => ws?.remove());

describe("proc environ", () => {
  it.each([
    ["Python", "main.py" as const, PY_PROC_SCAN(MARKER)],
    ["JS", "main.mjs" as const, JS_PROC_SCAN(MARKER)],
  ])("a learned %s script cannot read Ratchet's environment through /proc", async (lang, file, code) => {
    const home = attackWorkflow(ws, `proc-${lang.toLowerCase()}`, [{ id: "scan", file, code }]);
    const r = await ws.run(["run", home, "--json"], {
      env: { OPENAI_API_KEY: FAKE_KEY, RATCHET_ESCAPE_MARKER: MARKER },
    });
    const run = runJson(r);
    expect(
      run.steps.map((s) => [s.step_id, s.outcome]),
      r.stderr,
    ).toEqual([["scan", "passed"]]);
    const got = found<{ hits: string[]; tried: number }>(home, run.run_id, "scan");
    expect(got.tried).toBeGreaterThan(0);
    expect(got.hits, JSON.stringify(run.steps)).toEqual([]);
    expect(filesContaining(home, FAKE_KEY)).toEqual([]);
    expect(filesContaining(home, MARKER)).toEqual([]);
  });

  it("a runner command cannot read the key from /proc/$PPID or any /proc/<pid>/environ", async () => {
    const r = makeRepo("ratchet-esc-proc-runner-");
    const model = await startScriptedModel({
      script: {
        turns: [
          {
            tool_calls: [
              // The launcher's parent is Ratchet.
              {
                name: "run_command",
                arguments: {
                  command: "cat /proc/$PPID/environ; cat /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/environ",
                },
              },
              {
                name: "run_command",
                arguments: {
                  command:
                    "grep -a -o -h -E '(RATCHET_ESCAPE_MARKER|OPENAI_API_KEY)=[^[:cntrl:]]*' /proc/[0-9]*/environ",
                },
              },
            ],
          },
          { tool_calls: [{ name: "finish", arguments: { summary: "looked around" } }] },
        ],
      },
    });
    try {
      const spec = join(r.root, "task.json");
      writeFileSync(spec, JSON.stringify(calcSpec(r, { max_rounds: 1 })));
      const res = await ratchet(["runner", "run", spec, "--json"], {
        cwd: r.root,
        env: {
          ...GIT_IDENTITY,
          RATCHET_MODEL: "openai-compatible:scripted",
          OPENAI_BASE_URL: model.url,
          // The model key (redaction may mask it) and a plain marker (nothing masks it).
          OPENAI_API_KEY: FAKE_KEY,
          RATCHET_ESCAPE_MARKER: MARKER,
          RATCHET_DB: undefined,
        },
        timeoutMs: 120_000,
      });
      expect(res.status, res.stderr).not.toBe(2);
      const sent = JSON.stringify(model.requests());
      const events = readFileSync(join(r.out, "fix-calc.events.jsonl"), "utf8");
      // Both commands ran (none refused by the guard), so only the sandbox stood in the way.
      expect(events).not.toContain("tool_refused");
      expect(sent).toContain("environ");
      for (const secret of [FAKE_KEY, MARKER]) {
        expect(sent).not.toContain(secret);
        expect(events).not.toContain(secret);
        expect(filesContaining(r.out, secret)).toEqual([]);
      }
    } finally {
      await model.close();
      r.remove();
    }
  });

  it("a script started by POST /api/runs cannot read RATCHET_SERVER_TOKEN from the server", async () => {
    const home = attackWorkflow(ws, "proc-serve", [
      { id: "py", file: "main.py", code: PY_PROC_SCAN(SERVER_TOKEN) },
    ]);
    const server = startRatchet(["serve", "--port", "0", "--quiet"], {
      cwd: ws.dir,
      env: { RATCHET_SERVER_TOKEN: SERVER_TOKEN, OPENAI_API_KEY: FAKE_KEY },
      timeoutMs: 120_000,
    });
    try {
      const deadline = Date.now() + 30_000;
      while (!server.stdoutSoFar().includes("\n")) {
        if (Date.now() > deadline) throw new Error(`serve did not start: ${server.stderrSoFar()}`);
        await new Promise((res) => setTimeout(res, 50));
      }
      const url = (JSON.parse(server.stdoutSoFar().split("\n")[0] as string) as { url: string }).url;
      const started = await fetch(`${url}/api/runs`, {
        method: "POST",
        headers: { authorization: `Bearer ${SERVER_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ workflow: home }),
      });
      expect(started.status, await started.clone().text()).toBe(202);
      const { run_id: runId } = (await started.json()) as { run_id: string };
      let status = "running";
      for (let i = 0; i < 600 && (status === "running" || status === "pending"); i++) {
        await new Promise((res) => setTimeout(res, 100));
        const got = (await (await fetch(`${url}/api/runs/${runId}`)).json()) as { run: { status: string } };
        status = got.run.status;
      }
      expect(status).toBe("passed");
      expect(found<{ hits: string[] }>(home, runId, "py").hits).toEqual([]);
      expect(filesContaining(ws.dir, SERVER_TOKEN)).toEqual([]);
      expect(filesContaining(ws.dir, FAKE_KEY)).toEqual([]);
    } finally {
      server.child.kill("SIGTERM");
      await server.done.catch(() => undefined);
    }
  });
});
