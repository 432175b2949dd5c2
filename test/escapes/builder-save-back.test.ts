/**
 * Escape: the Builder saving a script that never ran (issue 13, item 7). A hostile candidate,
 * written by the scripted model and run by real python3 with no write protection at all
 * (RATCHET_SANDBOX=off, so nothing but save-back stands in the way):
 *
 * (a) rewrites its own code/main.py while it runs — what lands in learnings/ is never the rewritten
 *     text (the run is not a pass; nothing is saved, or the version that really ran);
 * (b) plants code/extra.py as a symbolic link to .ratchet/secrets, or swaps main.py itself for one —
 *     nothing of the secrets file reaches learnings/ (nor the model);
 * (c) leaves a file over the size limit in code/ — the save is refused, naming the file.
 */
import { existsSync, lstatSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildStep } from "../../src/builder/build.js";
import { SAVE_FILE_MAX_BYTES } from "../../src/builder/limits.js";
import { builderFixture, clientOf, GOOD, scripted, writesScript } from "../helpers/builder.js";

const SECRET = "hunter2-SAVE-BACK-CANARY-7f3a";

/** Every regular file under `dir`, recursively, as text (links are not followed: a link is not a copy). */
function allText(dir: string): string {
  if (!existsSync(dir)) return "";
  let out = "";
  for (const name of readdirSync(dir)) {
    const abs = join(dir, name);
    const st = lstatSync(abs);
    if (st.isDirectory()) out += allText(abs);
    else if (st.isFile()) out += readFileSync(abs, "utf8");
  }
  return out;
}

/** Writes report.json (so the run validates), then does `evil` (Python lines). */
function candidate(evil: string[]): string {
  return [...GOOD.trimEnd().split("\n"), 'code = os.environ["STEP_EXECUTION_DIR"]', ...evil, ""].join("\n");
}

/**
 * `.ratchet/secrets` from `code` (`<root>/wf/execution/<run>/report/code`), built so that static
 * review cannot follow it, as a determined script would.
 */
const SECRETS_FROM_CODE = '"/".join(code.split("/")[:-5] + [".RATCHET".lower(), "secrets"])';

const REWRITTEN = `${GOOD}# REWRITTEN-DURING-THE-RUN\n`;

/** A reply that writes `files` (name → content) and finishes. */
function writesFiles(files: Record<string, string>) {
  return {
    tool_calls: [
      ...Object.entries(files).map(([path, content]) => ({
        name: "write_file",
        arguments: { path, content },
      })),
      { name: "finish", arguments: { summary: "done" } },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 10 },
  };
}

function withSecrets(sandbox: "off" | "auto" = "off") {
  const f = builderFixture();
  writeFileSync(join(f.ctx.workspace.dir, "secrets"), `API_TOKEN=${SECRET}\n`);
  if (sandbox === "auto") f.env.RATCHET_SANDBOX = undefined;
  return f;
}

describe("escape: the Builder saves only the bytes that ran", () => {
  it.each(["off", "auto"] as const)(
    "(a) a script that rewrites its own main.py while it runs is not a pass and is not saved (sandbox %s)",
    async (sandbox) => {
      const f = withSecrets(sandbox);
      const selfRewriting = candidate([
        `open(os.path.join(code, "main.py"), "w").write(${JSON.stringify(REWRITTEN)})`,
      ]);
      // Every agent writes the self-rewriting script again: no attempt may pass, nothing is saved.
      const model = await scripted({ turns: [], default: writesScript(selfRewriting) });
      const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
      expect(r.attempts[0]?.outcome).toBe("script_failed");
      expect(r.attempts[0]?.error).toMatch(/code\/main\.py changed while the script ran/);
      expect(r.verdict).toBe("failed");
      expect(r.saved).toBeNull();
      expect(r.not_saved_reason).toMatch(/code\/main\.py changed while the script ran/);
      expect(existsSync(join(f.home, "learnings", "report", "main.py"))).toBe(false);
      expect(allText(join(f.home, "learnings"))).not.toContain("REWRITTEN-DURING-THE-RUN");
      // The agent was told why, so an honest one can repair it.
      const repair = JSON.stringify(model.requests()[1]?.body);
      expect(repair).toContain("must not rewrite its own code");
    },
  );

  it("(a) after a self-rewriting attempt, what is saved is the repaired script that ran, never the rewritten text", async () => {
    const f = withSecrets();
    const selfRewriting = candidate([
      `open(os.path.join(code, "main.py"), "w").write(${JSON.stringify(REWRITTEN)})`,
    ]);
    const model = await scripted({
      turns: [writesScript(selfRewriting), writesScript(GOOD, { contains: "Repair attempt 1 of 3" })],
    });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.attempts.map((a) => [a.kind, a.outcome])).toEqual([
      ["author", "script_failed"],
      ["repair", "passed"],
    ]);
    expect(r.saved).toMatchObject({ script_version: 1, changed: true });
    expect(readFileSync(join(f.home, "learnings", "report", "main.py"), "utf8")).toBe(GOOD);
  });

  it("(a) a script that rewrites an imported module of code/ is caught the same way", async () => {
    const f = withSecrets();
    const main = candidate([
      "import helper",
      'open(os.path.join(code, "helper.py"), "w").write("import os\\nos.system(\\"id\\")\\n")',
    ]);
    const model = await scripted({
      turns: [],
      default: writesFiles({ "main.py": main, "helper.py": "VALUE = 1\n" }),
    });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.saved).toBeNull();
    expect(r.not_saved_reason).toMatch(/code\/helper\.py changed while the script ran/);
    expect(existsSync(join(f.home, "learnings", "report", "helper.py"))).toBe(false);
  });

  it.each(["off", "auto"] as const)(
    "(b) a link code/extra.py -> .ratchet/secrets planted by the run: the run fails, nothing reaches learnings/ (sandbox %s)",
    async (sandbox) => {
      const f = withSecrets(sandbox);
      const planting = candidate([`os.symlink(${SECRETS_FROM_CODE}, os.path.join(code, "extra.py"))`]);
      // The repair writes a clean script, but the planted link is still in code/: refused, not run.
      const model = await scripted({ turns: [writesScript(planting)], default: writesScript(GOOD) });
      const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
      expect(r.attempts[0]?.outcome).toBe("script_failed");
      expect(r.attempts[0]?.error).toMatch(/code\/extra\.py was written by a run of the script/);
      expect(r.attempts[1]?.error).toMatch(/code\/extra\.py was written by a run.*the script was not run/);
      expect(r.verdict).toBe("failed");
      expect(r.saved).toBeNull();
      expect(r.not_saved_reason).toMatch(/code\/extra\.py was written by a run of the script/);
      expect(existsSync(join(f.home, "learnings", "report", "extra.py"))).toBe(false);
      expect(allText(join(f.home, "learnings"))).not.toContain(SECRET);
      for (const q of model.requests()) expect(JSON.stringify(q.body)).not.toContain(SECRET);
    },
  );

  it("(b) a data link code/extra.txt -> .ratchet/secrets planted by a passing run is left out of the saved folder", async () => {
    const f = withSecrets();
    const planting = candidate([`os.symlink(${SECRETS_FROM_CODE}, os.path.join(code, "extra.txt"))`]);
    const model = await scripted({ turns: [writesScript(planting)] });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.verdict).toBe("passed");
    // The saved folder is the one the run started from: main.py, without the planted link.
    expect(r.saved).toMatchObject({ script_version: 1 });
    const saved = join(f.home, "learnings", "report");
    expect(readFileSync(join(saved, "main.py"), "utf8")).toBe(planting);
    expect(existsSync(join(saved, "extra.txt"))).toBe(false);
    expect(allText(join(f.home, "learnings"))).not.toContain(SECRET);
  });

  it("(b) a run that swaps main.py for a link to .ratchet/secrets: refused, nothing of the secrets saved or shown to the model", async () => {
    const f = withSecrets();
    const swapping = candidate([
      'os.remove(os.path.join(code, "main.py"))',
      `os.symlink(${SECRETS_FROM_CODE}, os.path.join(code, "main.py"))`,
    ]);
    // The repairs "finish" without touching anything: the next runs find the link where main.py was.
    const model = await scripted({
      turns: [writesScript(swapping)],
      default: { tool_calls: [{ name: "finish", arguments: { summary: "ok" } }] },
    });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.verdict).toBe("failed");
    expect(r.saved).toBeNull();
    expect(r.not_saved_reason).toMatch(/code\/main\.py is a symbolic link: only regular files are saved/);
    expect(r.attempts[1]?.error).toMatch(/code\/main\.py is a symbolic link.*the script was not run/);
    expect(allText(join(f.home, "learnings"))).not.toContain(SECRET);
    for (const q of model.requests()) expect(JSON.stringify(q.body)).not.toContain(SECRET);
    // Nor into the run folder (the attempt diffs of code/fix-diffs/ read main.py without following it).
    expect(allText(join(f.ctx.workspace.dir, "runs"))).not.toContain(SECRET);
  });

  it("(c) a file of code/ over the size limit is refused, naming it", async () => {
    const f = withSecrets();
    // The agent's own tools cannot write a file that large; the run grows one the agent wrote.
    const growing = [
      "import os",
      'code = os.environ["STEP_EXECUTION_DIR"]',
      `open(os.path.join(code, "data.txt"), "w").write("x" * ${SAVE_FILE_MAX_BYTES + 1})`,
      "",
    ].join("\n");
    const model = await scripted({
      turns: [writesFiles({ "main.py": growing, "data.txt": "small\n" })],
      default: writesScript(GOOD),
    });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.saved).toBeNull();
    expect(r.not_saved_reason).toMatch(
      new RegExp(
        `code/data\\.txt is ${SAVE_FILE_MAX_BYTES + 1} bytes, over the ${SAVE_FILE_MAX_BYTES}-byte limit`,
      ),
    );
    expect(existsSync(join(f.home, "learnings", "report", "main.py"))).toBe(false);
  });
});
