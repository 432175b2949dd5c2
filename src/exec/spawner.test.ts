/**
 * The resident spawner as a transport: what only it can get wrong (its death, many runs at once,
 * large streams), and that what a child sees and what a failed start reports are exactly what
 * Node's own spawn gives.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isGone, waitGone } from "../testing/processes.js";
import { buildEnv } from "./env.js";
import { runProcess } from "./process-runner.js";
import { spawnerInternals, spawnerPid } from "./spawner.js";
import {
  setTransport,
  spawnerMissing,
  spawnerReady,
  TRANSPORTS,
  type Transport,
  useTransport,
} from "./spawner-kit.js";
import type { RunRequest, RunResult } from "./types.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-spawner-test-"));
const env = buildEnv({ inherit: "minimal" });
let restore = (): void => {};
beforeAll(async () => {
  restore = await useTransport("spawner");
});
afterAll(() => {
  restore();
  rmSync(dir, { recursive: true, force: true });
});

const bash = (script: string, extra: Partial<RunRequest> = {}) =>
  runProcess({ command: "bash", args: ["-c", script], env, ...extra });

/**
 * Runs `req` over `t` (the spawner is ready: beforeAll) and puts the setting back at once: the
 * transport is read when the run starts, so runs over both may go side by side.
 */
function over(t: Transport, req: RunRequest): Promise<RunResult> {
  const back = setTransport(t);
  try {
    return runProcess(req);
  } finally {
    back();
  }
}

async function runningSpawner(): Promise<number> {
  expect(spawnerMissing()).toBeUndefined();
  await spawnerReady();
  const r = await bash("echo $PPID");
  const pid = spawnerPid();
  expect(pid).toBeDefined();
  expect(Number(r.stdout)).toBe(pid);
  return pid as number;
}

describe("the spawner's death", () => {
  it("settles a run in flight with spawnError ESPAWNER, kills its group, and the next run starts a new spawner", async () => {
    const old = await runningSpawner();
    // Killed once the run is under way: its grandchild's pid line has arrived.
    let underWay!: () => void;
    const printed = new Promise<void>((r) => {
      underWay = r;
    });
    const running = bash("sleep 30 & echo $!; sleep 30", { onOutput: () => underWay() });
    await printed;
    process.kill(old, "SIGKILL");
    const r = await running;
    expect(r.spawnError?.code).toBe("ESPAWNER");
    expect(r.spawnError?.message).toMatch(
      /spawner died while bash ran \(pid \d+\): its process group was killed/,
    );
    expect(r.exitCode).toBeNull();
    const grandchild = Number(r.stdout.split("\n")[0]);
    expect(grandchild).toBeGreaterThan(1);
    expect(await waitGone(grandchild)).toBe(true);
    expect(isGone(r.pid as number)).toBe(true);

    const next = await runningSpawner();
    expect(next).not.toBe(old);
  });

  it("restarts transparently when the spawner died between runs", async () => {
    const old = await runningSpawner();
    process.kill(old, "SIGKILL");
    expect(await waitGone(old)).toBe(true);
    await new Promise((r) => setTimeout(r, 50)); // its control pipe's close reaches us
    const r = await bash("echo ok");
    expect(r).toMatchObject({ exitCode: 0, stdout: "ok\n" });
    expect(r.spawnError).toBeUndefined();
    expect(await runningSpawner()).not.toBe(old);
  });
});

describe("many runs and large streams", () => {
  it("keeps 50 concurrent runs' interleaved output apart", async () => {
    const runs = Array.from({ length: 50 }, (_, i) =>
      bash(`for k in 1 2 3 4 5 6 7 8 9 10; do echo out-${i}-$k; echo err-${i}-$k >&2; done`),
    );
    const results = await Promise.all(runs);
    results.forEach((r, i) => {
      const want = (s: string) => Array.from({ length: 10 }, (_, k) => `${s}-${i}-${k + 1}\n`).join("");
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toBe(want("out"));
      expect(r.stderr).toBe(want("err"));
    });
  });

  it("carries 5 MB of output", async () => {
    const r = await bash("head -c 5000000 /dev/zero | tr '\\0' a; echo -n end >&2");
    expect(r.stdoutBytes).toBe(5_000_000);
    expect(r.stdout).toBe("a".repeat(5_000_000));
    expect(r.stderr).toBe("end");
  });

  it("writes a stdin larger than a socket buffer", async () => {
    const input = Buffer.alloc(3 * 1024 * 1024, "xyz");
    const r = await runProcess({ command: "wc", args: ["-c"], env, stdin: input });
    expect(r.stdout.trim()).toBe(String(input.length));
    const echoed = await runProcess({ command: "cat", env, stdin: input });
    expect(echoed.stdoutBytes).toBe(input.length);
    expect(echoed.stdout).toBe(input.toString());
  });
});

describe("the same as Node's own spawn", () => {
  const notExecutable = join(dir, "not-executable.sh");
  const aFile = join(dir, "a-file");
  writeFileSync(notExecutable, "#!/bin/sh\necho hi\n");
  chmodSync(notExecutable, 0o644);
  writeFileSync(aFile, "x");
  const cases: [string, RunRequest][] = [
    ["a missing command", { command: "ratchet-no-such-command-xyz", env }],
    ["a missing path", { command: join(dir, "nope.sh"), env }],
    ["a file without the execute bit", { command: notExecutable, env }],
    ["a path through a file", { command: join(aFile, "x"), env }],
    ["a missing cwd", { command: "true", env, cwd: join(dir, "does-not-exist") }],
    ["a cwd that is a file", { command: "true", env, cwd: aFile }],
    ["an empty PATH entry (the cwd)", { command: "x.sh", env: { PATH: ":/nowhere" }, cwd: dir }],
    ["arguments beyond what execve takes", { command: "true", args: ["a".repeat(200_000)], env }],
  ];
  it.each(cases)("reports %s with the same spawnError", async (_, req) => {
    const viaSpawner = await over("spawner", req);
    const viaNode = await over("child_process", req);
    expect(viaNode.spawnError).toBeDefined();
    expect(viaSpawner.spawnError).toEqual(viaNode.spawnError);
    expect(viaSpawner.pid).toBeUndefined();
  });

  it("runs a child without a cwd in Node's current cwd, also after a chdir", async () => {
    const before = process.cwd();
    process.chdir(dir);
    try {
      const results = await Promise.all(TRANSPORTS.map((t) => over(t, { command: "pwd", env })));
      expect(results.map((r) => r.stdout)).toEqual([`${dir}\n`, `${dir}\n`]);
    } finally {
      process.chdir(before);
    }
  });

  it("gives the child the same process state: session, signals, fds, stdio kinds, env, cwd", async () => {
    // Everything here but the pids must match: our shell prints what its own process is given.
    const script = [
      'read -r _ _ _ ppid pgrp sid _ < /proc/self/stat; [ "$pgrp" = "$$" ] && [ "$sid" = "$$" ] && echo leader',
      "grep -E '^Sig(Blk|Ign)' /proc/self/status",
      "ls /proc/self/fd | sort -n | tr '\\n' ' '; echo",
      "for f in 0 1 2; do readlink /proc/$$/fd/$f | sed 's/:.*//'; done",
      "env | sort",
      "pwd",
      "umask",
    ].join("\n");
    const req = { command: "bash", args: ["-c", script], env: { ...env, ONLY: "this" }, cwd: dir };
    const results = await Promise.all(TRANSPORTS.map((t) => over(t, req)));
    const [a, b] = results as [RunResult, RunResult];
    // Node's own spawn passes on any fd ≥ 3 its process left inheritable (vitest's worker has
    // one); the spawner closes every one of them.
    const fdLine = /^[0-9 ]+\n/m;
    expect(a.stdout.replace(fdLine, "")).toBe(b.stdout.replace(fdLine, ""));
    expect(a.stdout).toContain("leader\n");
    expect(a.stdout).toContain("SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
    expect(a.stdout).toMatch(/\n0 1 2 3 \n\/dev\/null\nsocket\nsocket\n/);
    const withStdin = await Promise.all(
      TRANSPORTS.map((t) => over(t, { command: "readlink", args: ["/proc/self/fd/0"], env, stdin: "" })),
    );
    expect(withStdin.map((r) => r.stdout.replace(/:.*/s, ""))).toEqual(["socket", "socket"]);
  });
});

describe("the event loop (a separate Node process on the built dist/)", () => {
  const door = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "dist", "exec", "index.js");
  const script = `
    const { runProcess } = await import(${JSON.stringify(door)});
    const { spawnerPid, startSpawner } = await import(${JSON.stringify(join(dirname(door), "spawner.js"))});
    for (let i = 0; i < 20; i++) {
      const r = await runProcess({ command: "/bin/true" });
      if (r.exitCode !== 0) throw new Error("run " + i + ": " + JSON.stringify(r));
    }
    // The first run used Node's spawn while the spawner started; by now it takes runs.
    await startSpawner();
    const r = await runProcess({ command: "sh", args: ["-c", "echo $PPID"] });
    console.log(r.stdout.trim() === String(spawnerPid()) ? "spawner" : "other", spawnerPid());
    // Does not hold the loop: Node exits while it runs, and it must not outlive Node.
    void runProcess({ command: "sh", args: ["-c", "echo $$ > " + process.argv[1] + "; exec sleep 30"], holdsLoop: false });
    await new Promise((r) => setTimeout(r, 300));
  `;
  it.skipIf(!existsSync(door))("holds it exactly while a run that holds it is in flight", async () => {
    const pidFile = join(dir, "held.pid");
    const r = await runProcess({
      command: process.execPath,
      args: ["--input-type=module", "-e", script, pidFile],
      env,
      timeoutMs: 30_000,
    });
    expect(r.stderr).toBe("");
    const [how, spawner] = r.stdout.trim().split(" ");
    expect(how).toBe("spawner");
    expect(r.exitCode).toBe(0);
    expect(r.durationMs).toBeLessThan(20_000);
    expect(await waitGone(Number(spawner))).toBe(true);
    expect(await waitGone(Number(readFileSync(pidFile, "utf8")))).toBe(true);
  });
});

// Last in this file: it switches this process to the fallback for good.
describe("an unusable stream socket", () => {
  it("falls back to Node's spawn for that run and every later one, with the same results", async () => {
    await runningSpawner();
    rmSync(spawnerInternals().socketPath as string);
    const r = await bash('echo "fell back $PPID"');
    expect(r).toMatchObject({ exitCode: 0, stdout: `fell back ${process.pid}\n` });
    expect(r.spawnError).toBeUndefined();
    const again = await bash("echo $PPID");
    expect(again.stdout).toBe(`${process.pid}\n`);
  });
});
