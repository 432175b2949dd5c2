import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hookCommand, mergePromptHook, planHookInstall, writeSettingsAtomic } from "./install.js";

const NODE = "/usr/bin/node";
const BIN = "/opt/ratchet/bin/ratchet.js";

function project(settings?: string): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-install-")));
  mkdirSync(join(dir, ".ratchet"));
  writeFileSync(join(dir, ".ratchet", "ratchet.db"), "");
  if (settings !== undefined) {
    mkdirSync(join(dir, ".claude"));
    writeFileSync(join(dir, ".claude", "settings.json"), settings);
  }
  return dir;
}

function install(dir: string) {
  const plan = planHookInstall({ cwd: dir, projectDir: dir, node: NODE, bin: BIN });
  if (plan.changed) writeSettingsAtomic(plan.settingsPath, plan.after);
  return plan;
}

describe("hook install", () => {
  it("merges into existing settings, keeps other keys and hooks, and a second install changes nothing", () => {
    const existing = {
      permissions: { allow: ["Bash(ls)"] },
      hooks: {
        PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "echo pre" }] }],
        UserPromptSubmit: [{ hooks: [{ type: "command", command: "other-tool log-prompt" }] }],
      },
    };
    const dir = project(JSON.stringify(existing, null, 2));
    const first = install(dir);
    expect(first.changed).toBe(true);
    expect(first.command).toBe(`${NODE} ${BIN} hook user-prompt --db ${join(dir, ".ratchet", "ratchet.db")}`);
    expect(first.diff).toContain(`+ `);
    expect(first.diff).not.toMatch(/^- /m);
    const written = JSON.parse(readFileSync(first.settingsPath, "utf8"));
    expect(written.permissions).toEqual(existing.permissions);
    expect(written.hooks.PreToolUse).toEqual(existing.hooks.PreToolUse);
    expect(written.hooks.UserPromptSubmit).toEqual([
      ...existing.hooks.UserPromptSubmit,
      { hooks: [{ type: "command", command: first.command, timeout: 10 }] },
    ]);
    const text = readFileSync(first.settingsPath, "utf8");
    const second = install(dir);
    expect(second.changed).toBe(false);
    expect(second.diff).toBe("");
    expect(readFileSync(first.settingsPath, "utf8")).toBe(text);
  });

  it("updates an older Ratchet prompt hook in place instead of adding a second one", () => {
    const old = {
      hooks: { UserPromptSubmit: [{ hooks: [{ type: "command", command: "ratchet hook user-prompt" }] }] },
    };
    const merged = mergePromptHook(old, hookCommand(NODE, BIN)) as {
      hooks: { UserPromptSubmit: { hooks: { command: string }[] }[] };
    };
    expect(merged.hooks.UserPromptSubmit).toHaveLength(1);
    expect(merged.hooks.UserPromptSubmit[0]?.hooks[0]?.command).toBe(`${NODE} ${BIN} hook user-prompt`);
    expect(old.hooks.UserPromptSubmit[0]?.hooks[0]?.command).toBe("ratchet hook user-prompt");
  });

  it("creates the file when there is none, and quotes paths with spaces", () => {
    const dir = project();
    const plan = install(dir);
    expect(plan.diff).toContain("(new file)");
    expect(JSON.parse(readFileSync(plan.settingsPath, "utf8")).hooks.UserPromptSubmit).toHaveLength(1);
    expect(hookCommand("/opt/my node/node", BIN, "/a b/ratchet.db")).toBe(
      `'/opt/my node/node' ${BIN} hook user-prompt --db '/a b/ratchet.db'`,
    );
  });

  it("refuses a settings file that is not a JSON object, or a hooks key of the wrong shape, writing nothing", () => {
    for (const bad of ["{ not json", "[1, 2]", '{"hooks": []}', '{"hooks": {"UserPromptSubmit": {}}}']) {
      const dir = project(bad);
      expect(() => planHookInstall({ cwd: dir, projectDir: dir, node: NODE, bin: BIN })).toThrow(
        /nothing written|not a JSON object/,
      );
      expect(readFileSync(join(dir, ".claude", "settings.json"), "utf8")).toBe(bad);
    }
    expect(() =>
      planHookInstall({ cwd: tmpdir(), projectDir: "/no/such/folder", node: NODE, bin: BIN }),
    ).toThrow(/no such folder/);
  });
});

describe("hook install on a PostgreSQL workspace", () => {
  it("never writes the database URL (it may hold a password) into the settings file", () => {
    const url = "postgres://ratchet:s3cret-pw@db.example:5432/ratchet";
    const viaFlag = planHookInstall({ cwd: project(), db: url, node: NODE, bin: BIN });
    expect(viaFlag.command).toBe(`${NODE} ${BIN} hook user-prompt`);
    expect(viaFlag.after).not.toContain("s3cret-pw");
    expect(viaFlag.notice).toContain("PostgreSQL");
    const dir = project();
    writeFileSync(join(dir, ".ratchet", "config.json"), JSON.stringify({ store: { url } }));
    const viaConfig = planHookInstall({ cwd: dir, projectDir: dir, node: NODE, bin: BIN });
    expect(viaConfig.command).toBe(`${NODE} ${BIN} hook user-prompt`);
    expect(viaConfig.after).not.toContain("s3cret-pw");
  });
});
