import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { applyForbidden, isWithin, parseSandboxConfig, readRoots } from "./read-roots.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-read-roots-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const home = join(dir, "home");
const project = join(dir, "project");
const ratchet = join(project, ".ratchet");
for (const d of [
  join(home, ".ssh"),
  join(home, ".pyenv", "versions", "3.11"),
  ratchet,
  join(project, "data"),
])
  mkdirSync(d, { recursive: true });
const forbid = { home, secretDirs: [ratchet] };

describe("read roots", () => {
  it("never gives $HOME, an ancestor of it, or a .ratchet folder; an interpreter inside home is fine", () => {
    const roots = applyForbidden([dir, home, ratchet, join(home, ".pyenv", "versions", "3.11")], forbid);
    expect(roots).toEqual([join(home, ".pyenv", "versions", "3.11")]);
  });
  it("replaces a folder holding .ratchet by its other entries", () => {
    expect(applyForbidden([project], forbid)).toEqual([join(project, "data")]);
  });
  it("skips missing and relative roots, and keeps system folders", () => {
    const roots = readRoots({ interpreters: [], own: [join(dir, "missing"), "rel/x"], extra: [], forbid });
    expect(roots).toContain("/usr");
    expect(roots).not.toContain("/etc");
    expect(roots.some((r) => r.includes("missing") || !r.startsWith("/"))).toBe(false);
    expect(roots.some((r) => isWithin("/etc/shadow", r))).toBe(false);
  });
});

describe("sandbox.read_roots in config.json", () => {
  it("accepts absolute existing folders", () => {
    expect(parseSandboxConfig({ read_roots: [join(project, "data")] }, forbid).readRoots).toEqual([
      join(project, "data"),
    ]);
    expect(parseSandboxConfig(undefined, forbid).readRoots).toEqual([]);
  });
  it.each([
    [{ read_roots: ["data"] }, "sandbox.read_roots[0]", /not an absolute path/],
    [{ read_roots: [join(dir, "nope")] }, "sandbox.read_roots[0]", /does not exist/],
    [{ read_roots: [join(project, "data"), home] }, "sandbox.read_roots[1]", /contains \$HOME/],
    [{ read_roots: [project] }, "sandbox.read_roots[0]", /would expose/],
    [{ read_roots: [ratchet] }, "sandbox.read_roots[0]", /would expose/],
    [{ read_roots: "/usr" }, "sandbox.read_roots", /list/],
    [{ read_roots: [7] }, "sandbox.read_roots[0]", /string/],
    [{ reads: [] }, "sandbox.reads", /unknown field/],
    [[], "sandbox", /object/],
  ])("refuses %j naming %s", (raw, field, message) => {
    try {
      parseSandboxConfig(raw, forbid);
      expect.unreachable();
    } catch (e) {
      expect((e as { code: string }).code).toBe("invalid_value");
      expect((e as { details: { field?: string } }).details.field).toBe(field);
      expect((e as Error).message).toMatch(message);
      expect((e as Error).message.startsWith(`${field}: `)).toBe(true);
    }
  });
});
