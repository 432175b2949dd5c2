/**
 * README "Using it", followed literally in a fresh temp folder through bin/ratchet.js, so the
 * README cannot drift: every command of its `sh` blocks runs with `npx ratchet` as the built CLI,
 * `<plan_id>`/`<run_id>`/`<url>` filled from the earlier output, and must exit 0. Also `init
 * --example` (idempotent, refuses to overwrite) and a run of the example from a clone leaving
 * `git status` clean.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { assertBuilt, BIN, childEnv, ROOT } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000 });
beforeAll(() => assertBuilt());

const cleanups: (() => unknown)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** The commands of the `sh` blocks of README's "Using it", comments dropped. */
function usingItCommands(): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const section = readme.slice(
    readme.indexOf("## Using it"),
    readme.indexOf("\n## ", readme.indexOf("## Using it") + 5),
  );
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
  return blocks
    .flatMap((b) => b.split("\n"))
    .map((l) => l.replace(/\s{2,}# .*$/, "").trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
}

const sh = (cmd: string, cwd: string, env: NodeJS.ProcessEnv) =>
  spawnSync("sh", ["-c", cmd], { cwd, env, encoding: "utf8" });

describe("README: Using it", () => {
  it("every command works as written in a fresh folder", async () => {
    const dir = tempDir("ratchet-readme-");
    const commands = usingItCommands();
    expect(commands.length).toBeGreaterThan(8);
    const env = childEnv({ RATCHET_DB: undefined, RATCHET_MODEL: undefined, NO_COLOR: "1" });
    const vars: Record<string, string> = {};
    const servers: ChildProcess[] = [];
    cleanups.push(() => {
      for (const s of servers) s.kill("SIGTERM");
    });
    for (const raw of commands) {
      let cmd = raw
        .replaceAll("npx ratchet", `'${process.execPath}' '${BIN}'`)
        .replaceAll("node node_modules/ratchet/", `'${process.execPath}' '${ROOT}/`)
        .replace(/(\.js)(\s)/, "$1'$2");
      for (const [k, v] of Object.entries(vars)) cmd = cmd.replaceAll(`<${k}>`, v);
      expect(cmd, `unfilled placeholder in: ${raw}`).not.toMatch(/<[a-z_]+>/);
      if (cmd.startsWith("export ")) {
        for (const [, k, v] of cmd.slice(7).matchAll(/(\w+)=(\S+)/g)) env[k!] = v!;
        continue;
      }
      if (cmd.endsWith("&")) {
        const child = spawn("sh", ["-c", `exec ${cmd.slice(0, -1)}`], {
          cwd: dir,
          env,
          stdio: ["ignore", "pipe", "inherit"],
        });
        servers.push(child);
        vars.url = await new Promise<string>((ok) => {
          let buf = "";
          child.stdout!.setEncoding("utf8").on("data", (d: string) => {
            buf += d;
            const m = /"url":"([^"]+)"/.exec(buf);
            if (m) ok(m[1]!);
          });
        });
        continue;
      }
      const r = sh(cmd, dir, env);
      expect(r.status, `${raw}\n${r.stdout}\n${r.stderr}`).toBe(0);
      vars.plan_id ??= /"plan_id":"([^"]+)"/.exec(r.stdout)?.[1] ?? (undefined as unknown as string);
      if (!vars.plan_id) delete vars.plan_id;
      const run = /\brun (run-[0-9a-z-]+) passed/.exec(r.stdout)?.[1];
      if (run) vars.run_id = run;
    }
    expect(vars.plan_id).toBeTruthy();
    expect(vars.run_id).toBeTruthy();
    expect(vars.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  });
});

describe("init --example", () => {
  it("the package ships what init --example copies (npm pack)", () => {
    const r = spawnSync("npm", ["pack", "--dry-run", "--json"], { cwd: ROOT, encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const paths = (JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    for (const f of [
      "examples/plans/demo-plan.yaml",
      "examples/scripted-model.json",
      "examples/workflows/hello/workflow.yaml",
      "examples/workflows/hello/learnings/greet/main.py",
      "examples/workflows/hello/learnings/summarise/main.py",
      "dist/testing/scripted-model-cli.js",
    ])
      expect(paths).toContain(f);
  });

  const run = (args: string[], cwd: string) =>
    spawnSync(process.execPath, [BIN, ...args], {
      cwd,
      env: childEnv({ RATCHET_DB: undefined }),
      encoding: "utf8",
    });

  it("says what it wrote; a second call writes nothing; a changed file is refused, nothing written", () => {
    const dir = tempDir("ratchet-example-");
    const first = run(["init", "--example"], dir);
    expect(first.status, first.stderr).toBe(0);
    const out = JSON.parse(first.stdout.trim().split("\n").at(-1)!) as {
      example: { written: string[]; unchanged: string[] };
    };
    expect(out.example.written).toEqual(
      expect.arrayContaining([
        "plan.yaml",
        "scripted-model.json",
        "workflows/hello/workflow.yaml",
        "workflows/hello/learnings/greet/main.py",
        "workflows/hello/.gitignore",
      ]),
    );
    const again = run(["init", "--example"], dir);
    expect(again.status).toBe(0);
    const second = JSON.parse(again.stdout.trim().split("\n").at(-1)!) as typeof out;
    expect(second.example.written).toEqual([]);
    expect(second.example.unchanged.sort()).toEqual(out.example.written.sort());

    // A user's edit is never overwritten, and the refusal writes nothing (not even a missing file).
    writeFileSync(join(dir, "plan.yaml"), "goal: mine\n");
    rmSync(join(dir, "scripted-model.json"));
    const refused = run(["init", "--example"], dir);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain("plan.yaml");
    expect(readFileSync(join(dir, "plan.yaml"), "utf8")).toBe("goal: mine\n");
    expect(() => readFileSync(join(dir, "scripted-model.json"))).toThrow();
  });

  it("a run of the example workflow inside a clone leaves the clone clean", () => {
    const dir = tempDir("ratchet-clone-");
    const clone = join(dir, "ratchet");
    expect(spawnSync("git", ["clone", "-q", ROOT, clone]).status).toBe(0);
    expect(run(["init"], clone).status).toBe(0);
    const r = run(["run", "examples/workflows/hello", "--group", "french"], clone);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("passed: 2 step(s), 0 tokens");
    const status = spawnSync("git", ["status", "--porcelain"], { cwd: clone, encoding: "utf8" });
    expect(status.stdout).toBe("");
  });
});
