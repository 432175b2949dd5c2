/**
 * Escape class: untrusted code reads credentials (issue 13 item 6). A learned Python script, a
 * learned JS script and a runner command try to read a fake `$HOME/.ssh/id_rsa`, the workspace's
 * `.ratchet/secrets` and the store (`.ratchet/ratchet.db`). None may get a byte of them.
 *
 * Enforced by `ratchet-confine` v2 read roots (exec/read-roots.ts: never `$HOME`, never
 * `.ratchet/`): fails against the v1 binary, which confines writes only.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { assertBuilt, makeTempDir, query, ratchet, type TestWorkspace } from "../helpers/cli.js";
import { runsOf } from "../helpers/run-home.js";
import { calcSpec, GIT_IDENTITY, makeRepo } from "../helpers/runner-repo.js";
import { attackWorkflow, filesContaining, found, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const SSH_KEY = "-----BEGIN FAKE KEY----- credential-reads-ssh-1f3e -----END FAKE KEY-----";
const SECRET = "credential-reads-secret-9a8b7c6d";

let ws: TestWorkspace;
let home: string;
let targets: Record<string, string>;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-cred-");
  home = makeTempDir("ratchet-esc-home-");
  mkdirSync(join(home, ".ssh"), { recursive: true });
  writeFileSync(join(home, ".ssh", "id_rsa"), `${SSH_KEY}\n`);
  chmodSync(join(home, ".ssh", "id_rsa"), 0o600);
  writeFileSync(join(ws.ratchetDir, "secrets"), `API_TOKEN=${SECRET}\n`);
  chmodSync(join(ws.ratchetDir, "secrets"), 0o600);
  targets = {
    ssh: join(home, ".ssh", "id_rsa"),
    secrets: join(ws.ratchetDir, "secrets"),
    store: ws.dbPath,
  };
});
afterAll(() => ws?.remove());

const PY = `import json
import os

out = {}
for name in ("ssh", "secrets", "store"):
    path = os.environ["VAR_" + name.upper()]
    try:
        with open(path, "rb") as f:
            data = f.read(64)
        out[name] = "read"
        print(data.decode("utf-8", "replace"))
    except OSError as e:
        out[name] = "refused: " + (e.strerror or "")
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    json.dump(out, f)
`;

const JS = `import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const out = {};
for (const name of ["ssh", "secrets", "store"]) {
  try {
    const data = readFileSync(process.env["VAR_" + name.toUpperCase()]);
    out[name] = "read";
    console.log(data.subarray(0, 64).toString());
  } catch (e) {
    out[name] = "refused: " + e.code;
  }
}
writeFileSync(join(process.env.STEP_OUTPUT_DIR, "found.json"), JSON.stringify(out));
`;

describe("credential reads", () => {
  it.each([
    ["Python", "main.py" as const, PY],
    ["JS", "main.mjs" as const, JS],
  ])("a learned %s script cannot read ~/.ssh, .ratchet/secrets or the store", async (lang, file, code) => {
    const wf = attackWorkflow(
      ws,
      `cred-${lang.toLowerCase()}`,
      [{ id: "read", file, code }],
      ["ssh", "secrets", "store"],
    );
    const r = await ws.run(
      [
        "run",
        wf,
        "--json",
        "--var",
        `ssh=${targets.ssh}`,
        "--var",
        `secrets=${targets.secrets}`,
        "--var",
        `store=${targets.store}`,
      ],
      { env: { HOME: home } },
    );
    const run = runJson(r);
    expect(
      run.steps.map((s) => s.outcome),
      r.stderr,
    ).toEqual(["passed"]);
    const got = found<Record<string, string>>(wf, run.run_id, "read");
    for (const name of ["ssh", "secrets", "store"]) expect(got[name], `${lang} ${name}`).toMatch(/^refused/);
    expect(filesContaining(runsOf(wf), "FAKE KEY")).toEqual([]);
    expect(filesContaining(runsOf(wf), SECRET)).toEqual([]);
  });

  it("sandbox.read_roots that would expose $HOME or .ratchet/ is refused naming the field; nothing is written", async () => {
    const wf = attackWorkflow(
      ws,
      "cred-config",
      [{ id: "py", file: "main.py", code: PY }],
      ["ssh", "secrets", "store"],
    );
    const config = join(ws.ratchetDir, "config.json");
    for (const [roots, field] of [
      [[home], "sandbox.read_roots[0]"],
      [["/usr", ws.dir], "sandbox.read_roots[1]"],
      [["relative/dir"], "sandbox.read_roots[0]"],
    ] as const) {
      writeFileSync(config, JSON.stringify({ sandbox: { read_roots: roots } }));
      const before = query(ws, "SELECT count(*) AS n FROM plans")[0];
      // The run home is the workspace's, shared with the other tests here: no new run folder.
      const runsBefore = existsSync(runsOf(wf)) ? readdirSync(runsOf(wf)).sort() : [];
      const r = await ws.run(
        ["run", wf, "--json", "--var", "ssh=x", "--var", "secrets=x", "--var", "store=x"],
        {
          env: { HOME: home },
        },
      );
      expect(r.status, r.stdout + r.stderr).toBe(2);
      expect(r.stderr + r.stdout).toContain(field);
      expect(query(ws, "SELECT count(*) AS n FROM plans")[0]).toEqual(before);
      expect(existsSync(runsOf(wf)) ? readdirSync(runsOf(wf)).sort() : []).toEqual(runsBefore);
      expect(existsSync(join(wf, "execution"))).toBe(false);
    }
    rmSync(config);
  });

  it("a runner command cannot read them either", async () => {
    const r = makeRepo("ratchet-esc-cred-runner-");
    const model = await startScriptedModel({
      script: {
        turns: [
          {
            tool_calls: Object.values(targets).map((p) => ({
              name: "run_command",
              arguments: { command: `head -c 200 ${p} | od -c | head -20` },
            })),
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
          HOME: home,
          RATCHET_MODEL: "openai-compatible:scripted",
          OPENAI_BASE_URL: model.url,
          OPENAI_API_KEY: "sk-test-0000000000",
          RATCHET_DB: undefined,
        },
        timeoutMs: 120_000,
      });
      expect(res.status, res.stderr).not.toBe(2);
      const events = readFileSync(join(r.out, "fix-calc.events.jsonl"), "utf8");
      expect(events).not.toContain("tool_refused");
      const sent = JSON.stringify(model.requests());
      // od -c spells the bytes one by one: the key's and the store's first letters.
      expect(sent).not.toMatch(/-\s+-\s+-\s+-\s+-\s+B\s+E\s+G\s+I\s+N/);
      expect(sent).not.toMatch(/A\s+P\s+I\s+_\s+T\s+O\s+K\s+E\s+N/);
      expect(sent).not.toMatch(/S\s+Q\s+L\s+i\s+t\s+e/);
    } finally {
      await model.close();
      r.remove();
    }
  });
});

describe("links planted in a saved script folder", () => {
  it("main.py as a link to .ratchet/secrets is not run, and a planted link beside it is not copied", async () => {
    const wf = attackWorkflow(ws, "cred-link", [{ id: "linked", file: "main.py", code: PY }], []);
    const saved = join(wf, "learnings", "linked");
    rmSync(join(saved, "main.py"));
    symlinkSync(targets.secrets as string, join(saved, "main.py"));
    symlinkSync(targets.secrets as string, join(saved, "notes.txt"));
    const r = await ws.run(["run", wf, "--json"], { env: { HOME: home } });
    const run = runJson(r);
    expect(run.steps.map((s) => s.outcome)).toEqual(["missing_script"]);
    expect(run.steps[0]?.error).toMatch(/not a regular file/);
    const exec = runsOf(wf);
    if (existsSync(exec)) expect(filesContaining(exec, SECRET)).toEqual([]);
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });
});
