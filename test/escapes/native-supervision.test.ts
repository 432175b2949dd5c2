/**
 * Attack: a process a script or `step run` command leaves behind (ignoring SIGTERM, or in a new
 * session via setsid) keeps running after the step: it rewrites a validated output, or survives
 * `kill -9` of Ratchet. The supervisor is a child subreaper: when the command exits, times out, is
 * signalled or loses its parent, every descendant is SIGKILLed and reaped before ratchet-confine
 * exits, and --cleanup folders are removed after that.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isGone } from "../../src/testing/processes.js";
import { confine, eventually, launch, scratch, skipReason } from "./native-kit.js";

/** bash that records its pid, starts a SIGTERM-ignoring straggler (optionally setsid'd) and waits. */
const straggler = (dir: string, setsid: boolean, thenExit: boolean) =>
  [
    thenExit ? "" : `trap "" TERM`,
    `echo $$ > ${dir}/main.pid`,
    `${setsid ? "setsid " : ""}bash -c 'trap "" TERM; echo $$ > ${dir}/straggler.pid; sleep 1; echo late > ${dir}/late.txt' &`,
    `while [ ! -s ${dir}/straggler.pid ]; do sleep 0.01; done`,
    thenExit ? "exit 0" : "sleep 30",
  ].join("\n");

const pidIn = (file: string) => Number(readFileSync(file, "utf8"));

describe.skipIf(skipReason !== undefined)("native: supervision", () => {
  const s = scratch("ratchet-native-supervision-");
  afterAll(() => s.remove());
  let n = 0;
  const fresh = () => {
    const dir = join(s.dir, `case-${n++}`);
    mkdirSync(dir);
    return dir;
  };

  it("--supervise-only --timeout-ms kills a SIGTERM-ignoring command and its setsid'd grandchild, exit 124", () => {
    const dir = fresh();
    const r = launch([
      "--supervise-only",
      "--timeout-ms",
      "300",
      "--kill-grace-ms",
      "200",
      "--",
      "/bin/bash",
      "-c",
      straggler(dir, true, false),
    ]);
    expect(r.status).toBe(124);
    expect(r.stderr).toBe("ratchet-confine: timed out after 300 ms\n");
    // Reaped before the launcher exited: gone now, not eventually.
    expect(isGone(pidIn(join(dir, "main.pid")))).toBe(true);
    expect(isGone(pidIn(join(dir, "straggler.pid")))).toBe(true);
  });

  for (const mode of ["confined", "supervise-only"] as const) {
    it(`after the command exits nothing it started still runs, and a straggler never writes (${mode})`, async () => {
      const dir = fresh();
      const flags =
        mode === "confined" ? ["--write", dir, "--write-file", "/dev/null"] : ["--supervise-only"];
      const r = launch([...flags, "--", "/bin/bash", "-c", straggler(dir, mode === "supervise-only", true)]);
      expect(r.status, r.stderr).toBe(0);
      const pid = pidIn(join(dir, "straggler.pid"));
      expect(isGone(pid)).toBe(true);
      // The straggler would have written after 1 s; it is dead, so the file never appears.
      expect(await eventually(() => existsSync(join(dir, "late.txt")), 1500)).toBe(false);
    });
  }

  it("SIGTERM to the launcher's process group (the process runner's cancel) ends everything promptly", async () => {
    const dir = fresh();
    const child = spawn(
      confine as string,
      [
        "--kill-grace-ms",
        "300",
        "--write",
        dir,
        "--write-file",
        "/dev/null",
        "--",
        "/bin/bash",
        "-c",
        straggler(dir, false, false),
      ],
      {
        detached: true,
        stdio: "ignore",
      },
    );
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) =>
      child.on("exit", (c, sig) => r([c, sig])),
    );
    expect(
      await eventually(
        () =>
          existsSync(join(dir, "straggler.pid")) &&
          readFileSync(join(dir, "straggler.pid"), "utf8").length > 0,
      ),
    ).toBe(true);
    process.kill(-(child.pid as number), "SIGTERM");
    const [code, sig] = await exited;
    // The command ignored SIGTERM, so the supervisor SIGKILLed it after the grace and re-raised that.
    expect(sig ?? code).toBe("SIGKILL");
    expect(isGone(pidIn(join(dir, "main.pid")))).toBe(true);
    expect(isGone(pidIn(join(dir, "straggler.pid")))).toBe(true);
  });

  it("--cleanup removes the folder after a normal exit, without following links out of it", () => {
    const dir = fresh();
    const keep = join(dir, "keep.txt");
    writeFileSync(keep, "outside the cleanup folder");
    const tmp = join(dir, "ratchet-step-x");
    mkdirSync(join(tmp, "sub"), { recursive: true });
    writeFileSync(join(tmp, "sub", "f"), "x");
    symlinkSync(keep, join(tmp, "link"));
    symlinkSync(dir, join(tmp, "dirlink"));
    const r = launch(["--cleanup", tmp, "--write", tmp, "--", "/bin/bash", "-c", `echo more > ${tmp}/g`]);
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(tmp)).toBe(false);
    expect(readFileSync(keep, "utf8")).toBe("outside the cleanup folder");
  });

  it("kill -9 of the parent: the command, its straggler and the --cleanup folder are all gone", async () => {
    const dir = fresh();
    const tmp = join(dir, "ratchet-step-y");
    mkdirSync(tmp);
    // A stand-in for Ratchet: spawns the launcher as the process runner does (own group), then waits.
    const args = [
      "--cleanup",
      tmp,
      "--write",
      dir,
      "--write-file",
      "/dev/null",
      "--",
      "/bin/bash",
      "-c",
      straggler(dir, false, false),
    ];
    const parent = spawn(
      process.execPath,
      [
        "-e",
        `require("node:child_process").spawn(${JSON.stringify(confine)}, ${JSON.stringify(args)}, { detached: true, stdio: "ignore" }); setInterval(() => {}, 1000);`,
      ],
      { stdio: "ignore" },
    );
    expect(
      await eventually(
        () =>
          existsSync(join(dir, "straggler.pid")) &&
          readFileSync(join(dir, "straggler.pid"), "utf8").length > 0,
      ),
    ).toBe(true);
    parent.kill("SIGKILL");
    expect(await eventually(() => !existsSync(tmp))).toBe(true);
    expect(
      await eventually(
        () => isGone(pidIn(join(dir, "main.pid"))) && isGone(pidIn(join(dir, "straggler.pid"))),
      ),
    ).toBe(true);
    expect(existsSync(join(dir, "late.txt"))).toBe(false);
  });

  it("refuses malformed supervision flags with exit 125, naming the flag", () => {
    const r = spawnSync(confine as string, ["--timeout-ms", "soon", "--", "true"], { encoding: "utf8" });
    expect(r.status).toBe(125);
    expect(r.stderr).toBe("ratchet-confine: --timeout-ms needs a whole number of milliseconds\n");
  });
});
