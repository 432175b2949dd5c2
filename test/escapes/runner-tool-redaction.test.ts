/**
 * Leak: runner commands and tools get hold of a secret — the model API key from the environment of
 * the Ratchet process (walking `/proc/<pid>/environ`), a workspace secret from
 * `.ratchet/secrets`, the same secret committed in a file of the repository (read_file, and a DoD
 * that prints it) — and print it. Whatever a channel yields, the value never reaches the model
 * (the requests the scripted model received), `events.jsonl`, `verifier.log`, `response.txt`,
 * `rounds.jsonl`, `hunk.md`, `result.json`, the ledger's events or the CLI's output.
 *
 * Through the built CLI: the model key is configured the way users configure it
 * (`OPENAI_API_KEY`), the workspace is a real `ratchet init` folder with a 0600 secrets file.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { Redactor } from "../../src/core/index.js";
import { parseTaskSpec, runTask } from "../../src/runner/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { scriptedModelClient } from "../../src/testing/scripted-model-client.js";
import { assertBuilt, query, ratchet } from "../helpers/cli.js";
import { CALC_FIXED_LINE, calcSpec, GIT_IDENTITY, git, makeRepo } from "../helpers/runner-repo.js";

vi.setConfig({ testTimeout: 90_000 });
beforeAll(() => assertBuilt());

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Values that match no credential shape: only their registration can mask them. */
const MODEL_KEY = "rk-model-key-THE-VALUE-271828";
const WORKSPACE_SECRET = "wks-secret-value-314159";

const cmd = (command: string) => ({ name: "run_command", arguments: { command } });
const py = (code: string) =>
  cmd(`python3 -c "import base64; exec(base64.b64decode('${Buffer.from(code).toString("base64")}'))"`);

describe("escape: secrets a runner command or tool obtains are masked before the model and every artifact", () => {
  it("model key from /proc, workspace secret from .ratchet/secrets and from a committed file", async () => {
    const r = makeRepo();
    cleanups.push(() => r.remove());
    // the user committed the secret value in the repository too (read_file sees it)
    writeFileSync(join(r.repo, "deploy.env"), `DEPLOY_TOKEN=${WORKSPACE_SECRET}\n`);
    git(r.repo, "add", "deploy.env");
    git(r.repo, "commit", "-q", "-m", "deploy env");
    const init = await ratchet(["init"], { cwd: r.root, env: { RATCHET_DB: undefined } });
    expect(init.status, init.stderr).toBe(0);
    const secrets = join(r.root, ".ratchet", "secrets");
    writeFileSync(secrets, `DEPLOY_TOKEN=${WORKSPACE_SECRET}\n`);
    chmodSync(secrets, 0o600);

    const walkProc = [
      "import glob",
      "for f in glob.glob('/proc/[0-9]*/environ'):",
      "    try:",
      "        for kv in open(f, 'rb').read().split(b'\\0'):",
      "            if kv.startswith(b'OPENAI_API_KEY='):",
      "                print('proc-found', kv.decode())",
      "    except Exception:",
      "        pass",
      "print('proc-walk-done')",
    ].join("\n");
    const model = await startScriptedModel({
      script: {
        turns: [
          {
            tool_calls: [
              { name: "read_file", arguments: { path: "deploy.env" } },
              cmd(`cat ${secrets}; echo secrets-read-done`),
              py(walkProc),
              cmd("echo env-key=$OPENAI_API_KEY; cat deploy.env"),
              { name: "search_code", arguments: { pattern: "DEPLOY_TOKEN" } },
            ],
          },
          {
            tool_calls: [
              {
                name: "edit_file",
                arguments: {
                  path: "calc.sh",
                  start_line: 3,
                  end_line: 3,
                  expected_text: "echo $(( $1 - $2 ))",
                  new_text: CALC_FIXED_LINE,
                },
              },
            ],
          },
          { tool_calls: [{ name: "finish", arguments: { summary: "fixed" } }] },
        ],
      },
    });
    cleanups.push(() => model.close());
    const spec = join(r.root, "task.json");
    writeFileSync(
      spec,
      JSON.stringify(
        calcSpec(r, {
          max_rounds: 1,
          // the DoD prints the committed secret too (verifier.log, the result's output tail)
          definition_of_done: { command: "cat deploy.env; bash test_calc.sh", assertion: "exit_code == 0" },
        }),
      ),
    );
    const res = await ratchet(["runner", "run", spec, "--json"], {
      cwd: r.root,
      env: {
        ...GIT_IDENTITY,
        RATCHET_DB: undefined,
        RATCHET_MODEL: "openai-compatible:scripted",
        OPENAI_BASE_URL: model.url,
        OPENAI_API_KEY: MODEL_KEY,
      },
    });
    expect(res.status, res.stderr + res.stdout).toBe(0);

    const events = readFileSync(join(r.out, "fix-calc.events.jsonl"), "utf8");
    // the channels did yield something, and it arrived masked
    expect(events).toContain("secrets-read-done");
    expect(events).toContain("proc-walk-done");
    expect(events).toContain("[REDACTED:SECRET_DEPLOY_TOKEN]");
    if (events.includes("proc-found")) expect(events).toContain("OPENAI_API_KEY=[REDACTED:OPENAI_API_KEY]");

    const texts: Record<string, string> = {
      stdout: res.stdout,
      stderr: res.stderr,
      requests: JSON.stringify(model.requests()),
    };
    for (const f of readdirSync(r.out)) texts[f] = readFileSync(join(r.out, f), "utf8");
    for (const f of [
      "verifier.log",
      "response.txt",
      "rounds.jsonl",
      "result.json",
      "hunk.md",
      "events.jsonl",
    ]) {
      expect(existsSync(join(r.out, `fix-calc.${f}`)), f).toBe(true);
    }
    const db = join(r.root, ".ratchet", "ratchet.db");
    if (existsSync(db)) {
      texts.ledger = JSON.stringify(
        query({ dbPath: db }, "SELECT payload FROM events WHERE entity_kind = 'runner_task'"),
      );
      expect(texts.ledger).toContain("task_finished");
    }
    expect(texts.requests).toContain("[REDACTED:SECRET_DEPLOY_TOKEN]");
    for (const [name, text] of Object.entries(texts)) {
      expect(text.includes(MODEL_KEY), `model key in ${name}`).toBe(false);
      expect(text.includes(WORKSPACE_SECRET), `workspace secret in ${name}`).toBe(false);
    }
    expect(JSON.parse(res.stdout).changed_files).toEqual(["calc.sh"]);
  });

  it("a command that copies a secret into an allowlisted file gets no patch exported", async () => {
    const r = makeRepo();
    cleanups.push(() => r.remove());
    writeFileSync(join(r.repo, "deploy.env"), `DEPLOY_TOKEN=${WORKSPACE_SECRET}\n`);
    git(r.repo, "add", "deploy.env");
    git(r.repo, "commit", "-q", "-m", "deploy env");
    const model = await startScriptedModel({
      script: {
        turns: [
          { tool_calls: [cmd("cat deploy.env >> calc.sh; echo copied")] },
          { tool_calls: [{ name: "finish", arguments: { summary: "done" } }] },
        ],
      },
    });
    cleanups.push(() => model.close());
    const spec = parseTaskSpec(
      calcSpec(r, {
        max_rounds: 1,
        definition_of_done: { command: "bash test_calc.sh; true", assertion: "exit_code == 0" },
        allow_passing_dod: true,
      }),
    );
    const result = await runTask(spec, {
      client: scriptedModelClient(model, { maxAttempts: 1 }),
      redactor: new Redactor().add("SECRET_DEPLOY_TOKEN", WORKSPACE_SECRET),
    });
    expect(result.status).toBe("refused");
    expect(result.refusals[0]?.code).toBe("patch_contains_secret");
    expect(result.patch_file).toBeNull();
    for (const f of readdirSync(r.out)) {
      expect(readFileSync(join(r.out, f), "utf8").includes(WORKSPACE_SECRET), f).toBe(false);
    }
    expect(JSON.stringify(model.requests()).includes(WORKSPACE_SECRET)).toBe(false);
  });
});
