/**
 * Escape tests of the resident spawner (src/exec/spawner.ts, native/spawner.c): a child started
 * through the one door — plain, as a trusted command runs, and confined under ratchet-confine, as
 * a DoD or a learned script runs — tries to drive the spawner: its control channel through
 * inherited fds or /proc, the stream socket with a guessed or replayed nonce, signals and ptrace,
 * and exhaustion. Every attack must fail, and the runs of other callers must still work.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildEnv } from "../../src/exec/env.js";
import { runProcess } from "../../src/exec/process-runner.js";
import { spawnerInternals, spawnerPid } from "../../src/exec/spawner.js";
import { spawnerMissing, spawnerReady, useTransport } from "../../src/exec/spawner-kit.js";
import type { RunRequest } from "../../src/exec/types.js";
import { isGone, waitGone } from "../../src/testing/processes.js";
import { confine, defaultReads, outcomes, python, scratch, skipReason } from "./native-kit.js";

const env = buildEnv({ inherit: "minimal" });
const work = scratch("ratchet-spawner-escape-");
let restore = (): void => {};
beforeAll(async () => {
  restore = await useTransport("spawner");
});
afterAll(() => {
  restore();
  work.remove();
});

const py = python?.exe ?? "python3";
const run = (command: string, args: string[], extra: Partial<RunRequest> = {}) =>
  runProcess({ command, args, env, timeoutMs: 60_000, ...extra });
/** Under ratchet-confine with the documented read set, writes only to the scratch folder. */
const confined = (command: string, args: string[], extra: Partial<RunRequest> = {}) =>
  run(confine as string, [...defaultReads(), "--write", work.dir, "--", command, ...args], extra);

/** A victim run of another caller: exactly its own output, exit 0, through the same spawner. */
async function victimWorks(spawner: number): Promise<void> {
  const r = await run("bash", ["-c", 'echo "victim $PPID"; echo victim-err >&2']);
  expect(r).toMatchObject({ exitCode: 0, stdout: `victim ${spawner}\n`, stderr: "victim-err\n" });
  expect(r.spawnError).toBeUndefined();
}

async function theSpawner(): Promise<number> {
  expect(spawnerMissing()).toBeUndefined();
  await spawnerReady();
  const r = await run("bash", ["-c", "echo $PPID"]);
  const pid = spawnerPid();
  expect(Number(r.stdout)).toBe(pid);
  return pid as number;
}

/** Connects to the stream socket with each given hello and reports whether Node dropped it. */
const FORGE = `
import socket, sys, os
path = sys.argv[1]
for label, hexhello in zip(sys.argv[2::2], sys.argv[3::2]):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(path)
        s.sendall(bytes.fromhex(hexhello) + b"INJECTED-" + label.encode() + b"\\n")
        got = s.recv(100)
        print(label, "dropped" if got == b"" else "ANSWERED")
    except (ConnectionResetError, BrokenPipeError):
        print(label, "dropped")
    except Exception as e:
        print(label, "error", type(e).__name__)
`;

describe("a plain child of the door", () => {
  it("inherits no fd of the spawner: nothing is open beyond 0, 1 and 2", async () => {
    const r = await run(py, [
      "-c",
      "import os\nfound = []\nfor fd in range(3, 1025):\n    try:\n        os.fstat(fd)\n        found.append(fd)\n    except OSError:\n        pass\nprint('open', found)",
    ]);
    expect(r.stdout).toBe("open []\n");
  });

  it("cannot reach the control channel through /proc/<spawner>/fd", async () => {
    const spawner = await theSpawner();
    const r = await run(py, [
      "-c",
      `import os
for fd in (0, 1):
    try:
        f = os.open("/proc/${spawner}/fd/%d" % fd, os.O_WRONLY)
        os.write(f, b"\\xff" * 64)
        print("fd%d WROTE" % fd)
    except OSError as e:
        print("fd%d" % fd, e.errno)`,
    ]);
    const o = outcomes(r.stdout);
    // A socket cannot be reopened through /proc (ENXIO); nothing reached the spawner.
    expect(o["fd0"]).toMatch(/^\d+$/);
    expect(o["fd1"]).toMatch(/^\d+$/);
    expect(spawnerPid()).toBe(spawner);
    await victimWorks(spawner);
  });

  it("cannot connect a forged stream: random, zero and replayed nonces are dropped", async () => {
    const spawner = await theSpawner();
    // A finished run's nonce: the strongest replay (the attacker would have had to read it).
    await victimWorks(spawner);
    const replayed = spawnerInternals().lastUsedNonce as string;
    const path = spawnerInternals().socketPath as string;
    expect(replayed).toMatch(/^[0-9a-f]{32}$/);
    const rand = () => [...Array(32)].map(() => "0123456789abcdef"[Math.floor(Math.random() * 16)]).join("");
    const hellos = [
      ["random-out", `${rand()}01`],
      ["random-err", `${rand()}02`],
      ["zero", `${"0".repeat(32)}01`],
      ["replay-out", `${replayed}01`],
      ["replay-err", `${replayed}02`],
      ["replay-in", `${replayed}00`],
      ["bad-stream", `${replayed}07`],
    ];
    // A victim runs meanwhile: nothing forged may show up in it.
    const victim = run("bash", ["-c", "sleep 0.5; echo victim"]);
    const r = await run(py, ["-c", FORGE, path, ...hellos.flat()]);
    const o = outcomes(r.stdout);
    for (const [label] of hellos) expect(o[label as string]).toBe("dropped");
    const v = await victim;
    expect(v).toMatchObject({ exitCode: 0, stdout: "victim\n", stderr: "" });
    expect(spawnerPid()).toBe(spawner);
  });

  it("a flood of connections that never name a stream does not stop other runs", async () => {
    const spawner = await theSpawner();
    const path = spawnerInternals().socketPath as string;
    const flood = run(py, [
      "-c",
      `import socket, sys, time
held = []
for i in range(300):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1]); held.append(s)
print("held", len(held), flush=True)
time.sleep(2)`,
      path,
    ]);
    await new Promise((r) => setTimeout(r, 500));
    await Promise.all(Array.from({ length: 10 }, () => victimWorks(spawner)));
    expect((await flood).stdout).toBe("held 300\n");
  });

  it("a child that kills its spawner takes down only the runs in flight; the next runs start a new one", async () => {
    const spawner = await theSpawner();
    const r = await run("bash", ["-c", "kill -KILL $PPID; sleep 5"]);
    expect(r.spawnError?.code).toBe("ESPAWNER");
    expect(await waitGone(spawner)).toBe(true);
    const next = await theSpawner();
    expect(next).not.toBe(spawner);
    await victimWorks(next);
  });
});

describe.skipIf(skipReason !== undefined)("a confined child of the door (ratchet-confine)", () => {
  it("cannot signal, ptrace or look into the spawner", async () => {
    const spawner = await theSpawner();
    const r = await confined(py, [
      "-c",
      `import os, ctypes, signal
for name, sig in (("kill", signal.SIGKILL), ("stop", signal.SIGSTOP), ("term", signal.SIGTERM)):
    try:
        os.kill(${spawner}, sig); print(name, "SENT")
    except OSError as e:
        print(name, e.errno)
libc = ctypes.CDLL(None, use_errno=True)
print("ptrace", "ATTACHED" if libc.ptrace(16, ${spawner}, 0, 0) == 0 else ctypes.get_errno())
try:
    print("fds", os.listdir("/proc/${spawner}/fd"))
except OSError as e:
    print("fds", e.errno)`,
    ]);
    const o = outcomes(r.stdout);
    expect(o["kill"]).toBe("1"); // EPERM
    expect(o["stop"]).toBe("1");
    expect(o["term"]).toBe("1");
    expect(o["ptrace"]).toBe("1");
    expect(o["fds"]).toMatch(/^\d+$/);
    expect(spawnerPid()).toBe(spawner);
    expect(isGone(spawner)).toBe(false);
    await victimWorks(spawner);
  });

  it("a fork bomb inside its group is gone when the run settles, and other runs still work", async () => {
    const spawner = await theSpawner();
    const r = await confined("bash", [
      "-c",
      "for i in $(seq 200); do sleep 30 & done; echo $!; echo started",
    ]);
    expect(r.exitCode).toBe(0);
    const last = Number(r.stdout.split("\n")[0]);
    expect(last).toBeGreaterThan(1);
    expect(isGone(last)).toBe(true);
    await victimWorks(spawner);
  });

  it("a child that never closes stdout does not hold up the runs of others", async () => {
    const spawner = await theSpawner();
    // Its background sleep keeps stdout open after the shell exits: the run ends after the grace.
    const hog = confined("bash", ["-c", "sleep 30 & echo $!"]);
    await Promise.all(Array.from({ length: 20 }, () => victimWorks(spawner)));
    const h = await hog;
    expect(h.exitCode).toBe(0);
    expect(await waitGone(Number(h.stdout.split("\n")[0]))).toBe(true);
  });
});
