/**
 * Escapes from a forkserver run by signals, ptrace and leftovers: the script aims at its parent
 * (its keeper), its server, and another run going on at the same time (its script, its keeper,
 * its server: a server runs one run at a time, so two runs at once are two servers of one
 * confinement), with SIGTERM, SIGKILL, SIGSTOP and 0, by `os.kill`, `os.killpg`, `kill(-1)`,
 * `pidfd_send_signal`, `ptrace`, `pidfd_getfd` and `/proc/<pid>/mem`; and it leaves a daemon
 * behind. Every attempt must fail exactly as it fails in a plain start through the launcher (where
 * the script's parent is the supervisor, outside its domain), and the other run must live on.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import type { RunResult } from "../../src/exec/index.js";
import { gone, useForkKit } from "../helpers/fork-kit.js";

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

const k = useForkKit("escape suite");

/**
 * Tries everything against each `name=pid` target (and its parent as "parent"); prints one JSON
 * object {attempt: "ESCAPED" | "blocked ERRNO"}.
 */
const ATTACK = `import ctypes, errno, json, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
res = {}


def check(r):
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def attempt(name, fn):
    try:
        fn()
        res[name] = "ESCAPED"
    except OSError as e:
        res[name] = "blocked " + errno.errorcode.get(e.errno, str(e.errno))


def with_pidfd(pid, fn):
    fd = os.pidfd_open(pid)
    try:
        fn(fd)
    finally:
        os.close(fd)


def getfd(fd):
    os.close(check(libc.syscall(438, fd, 0, 0)))  # pidfd_getfd: the target's stdin


targets = [("parent", os.getppid())] + [(a.split("=")[0], int(a.split("=")[1])) for a in sys.argv[1:]]
for name, pid in targets:
    for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGSTOP, 0):
        attempt(f"{name} kill {int(sig)}", lambda: os.kill(pid, sig))
        attempt(f"{name} pidfd {int(sig)}", lambda: with_pidfd(pid, lambda fd: signal.pidfd_send_signal(fd, sig)))
    if os.getpgid(pid) == os.getpgid(0):
        res[f"{name} killpg 9"] = "own group (not tried)"
    else:
        attempt(f"{name} killpg 9", lambda: os.killpg(os.getpgid(pid), signal.SIGKILL))
    attempt(f"{name} ptrace attach", lambda: check(libc.ptrace(16, pid, None, None)))
    attempt(f"{name} ptrace seize", lambda: check(libc.ptrace(0x4206, pid, None, None)))
    attempt(f"{name} pidfd_getfd", lambda: with_pidfd(pid, getfd))
    attempt(f"{name} mem", lambda: open(f"/proc/{pid}/mem", "rb").read(1))
    attempt(f"{name} environ", lambda: open(f"/proc/{pid}/environ", "rb").read(1))
# kill(-1): only the script's own descendants.
child = os.fork()
if child == 0:
    signal.pause()
    os._exit(0)
for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGKILL):
    try:
        os.kill(-1, sig)
    except OSError as e:
        res[f"kill -1 {int(sig)}"] = "refused " + errno.errorcode.get(e.errno, "")
_, status = os.waitpid(child, 0)
res["kill -1 reached own child"] = os.WIFSIGNALED(status)
print(json.dumps(res, sort_keys=True))
`;

/** The other run: writes its pid and its keeper's, waits for the go file, says it survived. */
const VICTIM = `import os, sys, time
out = os.environ["STEP_OUTPUT_DIR"]
with open(os.path.join(out, "victim.tmp"), "w") as f:
    f.write(f"{os.getpid()} {os.getppid()}")
os.rename(os.path.join(out, "victim.tmp"), os.path.join(out, "victim.pids"))
go = os.path.join(out, "go")
deadline = time.monotonic() + 15
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.02)
print("survived" if os.path.exists(go) else "no go")
`;

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !ok(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!ok()) throw new Error(`timed out waiting for ${what}`);
}

function attacks(r: RunResult): Record<string, string | boolean> {
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, string | boolean>;
}

describe("a forked script cannot signal, trace or outlast anything outside its own run", () => {
  for (const confine of [false, true]) {
    it(`${confine ? "with the run's own roots: " : ""}its keeper, its server and another run at the same time fail as in a plain start`, async () => {
      const out = k().outDir;
      rmSync(join(out, "victim.pids"), { force: true });
      rmSync(join(out, "go"), { force: true });
      const server = await k().server();
      const other = await k().otherServer();
      const victim = k().runIn(other, VICTIM, [], "victim.py", confine);
      await until("the victim's pids", () => existsSync(join(out, "victim.pids")));
      const [vpid, vkeeper] = readFileSync(join(out, "victim.pids"), "utf8").split(" ").map(Number);
      const targets = [
        `server=${server.serverPid}`,
        `victim=${vpid}`,
        `victim-keeper=${vkeeper}`,
        `victim-server=${other.serverPid}`,
      ];
      const fork = attacks(await k().runIn(server, ATTACK, targets, "attack.py", confine));
      const plain = attacks(await k().plain(ATTACK, targets, "attack.py"));
      writeFileSync(join(out, "go"), "");
      const v = await victim;
      expect([v.exitCode, v.stdout], v.stderr).toEqual([0, "survived\n"]);
      // The one expected difference: a forked script shares its server's process group (the
      // launcher's seccomp filter refuses setpgid), a plain one does not.
      expect(fork["server killpg 9"]).toBe("own group (not tried)");
      expect(plain["server killpg 9"]).toBe("blocked EPERM");
      delete fork["server killpg 9"];
      delete plain["server killpg 9"];
      expect(fork).toEqual(plain);
      const escaped = Object.entries(fork).filter(([, r]) => r === "ESCAPED");
      expect(escaped).toEqual([]);
      // Not vacuous: each target was tried every way, and kill(-1) reached the script's own child.
      expect(Object.keys(fork).filter((n) => n.startsWith("victim-keeper "))).toHaveLength(14);
      expect(fork["parent kill 9"]).toBe("blocked EPERM");
      expect(fork["victim pidfd 19"]).toBe("blocked EPERM");
      expect(fork["server ptrace attach"]).toBe("blocked EPERM");
      expect(fork["kill -1 reached own child"]).toBe(true);
      // Both servers still serve.
      expect((await k().runIn(server, "print('alive')\n")).stdout).toBe("alive\n");
      expect((await k().runIn(other, "print('alive')\n")).stdout).toBe("alive\n");
    });
  }

  it("killpg of its own group and kill(-1) end only the script, as in a plain start", async () => {
    for (const s of [
      "import os, signal\nos.killpg(os.getpgid(0), signal.SIGTERM)\nprint('after')\n",
      "import os, signal\nos.killpg(0, signal.SIGKILL)\nprint('after')\n",
      "import os, signal\nos.kill(0, signal.SIGTERM)\nprint('after')\n",
      "import os, signal\nos.kill(-1, signal.SIGKILL)\nprint('after')\n",
    ]) {
      const plain = await k().plain(s);
      const fork = await k().fork(s);
      expect([fork.exitCode, fork.signal, fork.stdout]).toEqual([plain.exitCode, plain.signal, plain.stdout]);
    }
    expect((await k().fork("print('alive')\n")).stdout).toBe("alive\n");
  });

  it("a daemon the script leaves (double fork, setsid tried, stdout held or closed) is gone at the end", async () => {
    const s = `import os, sys, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        os.setsid()
    except OSError:
        pass
    if os.fork() == 0:
        if sys.argv[1] == "closed":
            null = os.open("/dev/null", os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
        os.write(w, str(os.getpid()).encode())
        time.sleep(30)
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(r, 32).decode(), flush=True)
`;
    for (const how of ["held", "closed"])
      for (const mode of ["plain", "fork"] as const) {
        const r = await k()[mode](s, [how]);
        expect(r.exitCode, r.stderr).toBe(0);
        const daemon = Number(r.stdout.trim());
        expect(daemon, `${mode} ${how}`).toBeGreaterThan(0);
        expect(gone(daemon), `${mode} ${how}`).toBe(true);
      }
  });
});
