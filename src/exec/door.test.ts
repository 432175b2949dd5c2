import { describe, expect, it } from "vitest";
import {
  type ConfineFeatures,
  type Confinement,
  compileConfinement,
  enforcedBy,
  LAUNCHER_TIMEOUT_MARGIN_MS,
  launcherFlags,
  launcherTimedOut,
  parseProbe,
  Supervise,
} from "./door.js";

const V1 = parseProbe("landlock abi 7\n") as ConfineFeatures;
const V2 = parseProbe(
  "landlock abi 7\nfeature reads yes\nfeature metadata yes\nfeature signals yes\nfeature proc yes\n",
) as ConfineFeatures;

const script: Confinement = {
  readRoots: ["/usr", "/w/code", "/w/out"],
  writeRoots: ["/w/out", "/tmp/ratchet-step-1-a"],
  writeFiles: ["/dev/null"],
  env: { PATH: "/usr/bin" },
  timeoutMs: 60_000,
  killGraceMs: 2000,
  supervise: Supervise.Confine,
  cleanup: ["/tmp/ratchet-step-1-a"],
};

describe("parseProbe", () => {
  it("reads a v1 probe (one line) as writes only, signals from ABI 6", () => {
    expect(V1).toEqual({ abi: 7, v2: false, reads: false, metadata: false, signals: true, proc: false });
    expect(parseProbe("landlock abi 5\n")?.signals).toBe(false);
  });
  it("reads the v2 feature lines, each on its own", () => {
    expect(V2).toEqual({ abi: 7, v2: true, reads: true, metadata: true, signals: true, proc: true });
    const partial = parseProbe(
      "landlock abi 4\nfeature reads yes\nfeature metadata no\nfeature signals no\n",
    );
    expect(partial).toMatchObject({ v2: true, reads: true, metadata: false, signals: false, proc: false });
  });
  it("is undefined without the abi line", () => {
    expect(parseProbe("")).toBeUndefined();
    expect(parseProbe("ratchet-confine: no landlock\n")).toBeUndefined();
  });
});

describe("launcherFlags", () => {
  it("passes only v1 flags to a v1 binary", () => {
    expect(launcherFlags(script, V1)).toEqual([
      "--write",
      "/w/out",
      "--write",
      "/tmp/ratchet-step-1-a",
      "--write-file",
      "/dev/null",
    ]);
  });
  it("passes supervision, reads (not repeating write roots) and --proc-self to a v2 binary", () => {
    expect(launcherFlags(script, V2)).toEqual([
      "--timeout-ms",
      "60000",
      "--kill-grace-ms",
      "2000",
      "--cleanup",
      "/tmp/ratchet-step-1-a",
      "--write",
      "/w/out",
      "--write",
      "/tmp/ratchet-step-1-a",
      "--write-file",
      "/dev/null",
      "--read",
      "/usr",
      "--read",
      "/w/code",
      "--proc-self",
    ]);
  });
  it("gates --read on the reads feature and --proc-self on proc", () => {
    const noReads = { ...V2, reads: false };
    expect(launcherFlags(script, noReads)).not.toContain("--read");
    expect(launcherFlags(script, noReads)).not.toContain("--proc-self");
    expect(launcherFlags(script, { ...V2, proc: false })).not.toContain("--proc-self");
    expect(launcherFlags({ ...script, procSelf: false }, V2)).not.toContain("--proc-self");
  });
  it("supervise-only carries no confinement flags at all", () => {
    const cmd = { ...script, supervise: Supervise.SuperviseOnly, cleanup: [] };
    expect(launcherFlags(cmd, V2)).toEqual([
      "--supervise-only",
      "--timeout-ms",
      "60000",
      "--kill-grace-ms",
      "2000",
    ]);
  });
});

describe("compileConfinement", () => {
  const launcher = (features: ConfineFeatures) =>
    ({ kind: "ratchet-confine", path: "/r/ratchet-confine", features }) as const;

  it("wraps the program after -- and lets the launcher own the time limit on v2", () => {
    const door = compileConfinement(script, launcher(V2));
    expect(door.protection).toBe("landlock");
    expect(door.launcherTimeout).toBe(true);
    expect(door.runnerTimeoutMs).toBe(60_000 + 2000 + LAUNCHER_TIMEOUT_MARGIN_MS);
    const c = door.command("/usr/bin/python3", ["-B", "main.py"]);
    expect(c.command).toBe("/r/ratchet-confine");
    expect(c.args.slice(-4)).toEqual(["--", "/usr/bin/python3", "-B", "main.py"]);
  });
  it("keeps the runner's time limit on v1", () => {
    const door = compileConfinement(script, launcher(V1));
    expect(door.launcherTimeout).toBe(false);
    expect(door.runnerTimeoutMs).toBe(60_000);
  });
  it("runs a supervise-only command directly where the launcher cannot supervise (v1, none)", () => {
    const cmd = { ...script, supervise: Supervise.SuperviseOnly };
    for (const door of [
      compileConfinement(cmd, launcher(V1)),
      compileConfinement(cmd, { kind: "none", reason: "not built" }),
    ]) {
      expect(door.protection).toBe("none");
      expect(door.command("bash", ["-c", "true"])).toEqual({ command: "bash", args: ["-c", "true"] });
    }
    expect(compileConfinement(cmd, launcher(V2)).protection).toBe("supervised");
  });
});

describe("launcherTimedOut and enforcedBy", () => {
  it("recognises the launcher's own time-out only with its exit status and line", () => {
    const line = "ratchet-confine: timed out after 500 ms\n";
    expect(launcherTimedOut({ launcherTimeout: true }, 124, line)).toBe(true);
    expect(launcherTimedOut({ launcherTimeout: true }, 124, "timeout from the script\n")).toBe(false);
    expect(launcherTimedOut({ launcherTimeout: false }, 124, line)).toBe(false);
    expect(launcherTimedOut({ launcherTimeout: true }, 1, line)).toBe(false);
  });
  it("says per guarantee what a launcher enforces", () => {
    expect(enforcedBy({ kind: "none", reason: "x" })).toEqual({
      writes: false,
      reads: false,
      metadata: false,
      signals: false,
      proc: false,
      supervision: false,
    });
    expect(enforcedBy({ kind: "ratchet-confine", path: "/c", features: V1 })).toEqual({
      writes: true,
      reads: false,
      metadata: false,
      signals: true,
      proc: false,
      supervision: false,
    });
    expect(Object.values(enforcedBy({ kind: "ratchet-confine", path: "/c", features: V2 }))).not.toContain(
      false,
    );
  });
});

describe("guaranteeReport", () => {
  it("names every guarantee with what enforces it or the fallback", async () => {
    const { formatGuarantees, guaranteeReport } = await import("./guarantees.js");
    const v1 = guaranteeReport({ kind: "ratchet-confine", path: "/c", features: V1 });
    expect(v1.map((g) => [g.guarantee, g.enforced])).toEqual([
      ["writes", true],
      ["reads", false],
      ["metadata", false],
      ["signals", true],
      ["proc", false],
      ["supervision", false],
    ]);
    const none = guaranteeReport({ kind: "none", reason: "ratchet-confine was not built" });
    expect(none.every((g) => !g.enforced)).toBe(true);
    expect(none[0]?.detail).toContain("ratchet-confine was not built");
    expect(formatGuarantees(v1)[1]).toMatch(/^NOT {6}reads/);
  });
});
