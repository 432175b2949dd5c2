import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sealBroken, sealOutputs } from "./output-seal.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-seal-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("output seals", () => {
  it("holds while nothing changes and names the first change, addition or removal; code/ is left out", () => {
    mkdirSync(join(dir, "code"), { recursive: true });
    mkdirSync(join(dir, "sub"), { recursive: true });
    writeFileSync(join(dir, "out.json"), '{"v": 1}');
    writeFileSync(join(dir, "sub", "a.txt"), "a");
    const seal = sealOutputs(dir);
    expect([...seal.keys()]).toEqual(["out.json", "sub/a.txt"]);
    writeFileSync(join(dir, "code", "main.py"), "changed working copy");
    expect(sealBroken(dir, seal)).toBeUndefined();
    writeFileSync(join(dir, "out.json"), '{"v": 2}');
    expect(sealBroken(dir, seal)).toBe("out.json changed");
    writeFileSync(join(dir, "out.json"), '{"v": 1}');
    writeFileSync(join(dir, "late.txt"), "x");
    expect(sealBroken(dir, seal)).toBe("late.txt appeared");
    rmSync(join(dir, "late.txt"));
    rmSync(join(dir, "sub", "a.txt"));
    expect(sealBroken(dir, seal)).toBe("sub/a.txt was removed");
  });
});
