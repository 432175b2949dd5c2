/**
 * Escapes from a forkserver run: a script trying to reach the server that forked it, or a previous
 * run's state — its control socket, its memory and environment through /proc, inherited
 * descriptors, signals to the server or its keeper, outliving its run. Every attempt must fail
 * (forkserver-signals.test.ts tries every signal path, ptrace and a concurrent run).
 */
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { describe, expect, it } from "vitest";
import { KEEPER_SETUP_FAILURE } from "../../src/exec/forkserver.js";
import { gone, useForkKit } from "../helpers/fork-kit.js";

const k = useForkKit("escape suite");

const TRY = `import os, sys
def attempt(name, fn):
    try:
        r = fn()
        print(name, "ESCAPED", repr(r)[:80])
    except Exception as e:
        print(name, "blocked", type(e).__name__)
`;

describe("a forkserver run cannot reach its server", () => {
  it("the control socket is gone and cannot be connected to", async () => {
    const s = await k().server();
    expect(existsSync(dirname(s.socketPath))).toBe(false);
    const r = await k().fork(
      `${TRY}import socket
def connect():
    c = socket.socket(socket.AF_UNIX)
    c.connect(sys.argv[1])
    return c.recv(10)
attempt("connect", connect)
`,
      [s.socketPath],
    );
    expect(r.stdout).toBe("connect blocked FileNotFoundError\n");
  });

  it("no descriptor is open in the script beyond a plain start's (stdout/stderr are socket pairs both ways)", async () => {
    const script = `import os, stat
open_fds = []
for fd in range(1024):
    try:
        st = os.fstat(fd)
        open_fds.append((fd, stat.S_ISSOCK(st.st_mode)))
    except OSError:
        pass
print(open_fds)
`;
    const r = await k().fork(script);
    const plain = await k().plain(script);
    expect(r.stdout).toBe(plain.stdout);
    expect(r.stdout).toMatch(/^\[\(0, False\), \(1, True\), \(2, True\)(, \(\d+, False\))*\]\n$/);
  });

  it("the server's /proc (environ, cmdline, mem, maps, fd) cannot be read", async () => {
    const s = await k().server();
    const r = await k().fork(
      `${TRY}pid = sys.argv[1]
for what in ("environ", "cmdline", "mem", "maps", "status"):
    attempt(what, lambda: open(f"/proc/{pid}/{what}", "rb").read(64))
attempt("fd", lambda: os.listdir(f"/proc/{pid}/fd"))
attempt("parent-environ", lambda: open(f"/proc/{os.getppid()}/environ", "rb").read(64))
`,
      [String(s.serverPid)],
    );
    expect(r.stdout).not.toMatch(/ESCAPED/);
    expect(r.stdout.split("\n").filter(Boolean)).toHaveLength(7);
  });

  it("the server cannot be signalled (SIGTERM, SIGKILL, SIGSTOP)", async () => {
    const s = await k().server();
    const r = await k().fork(
      `${TRY}import signal
pid = int(sys.argv[1])
for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGSTOP, 0):
    attempt(f"kill {int(sig)}", lambda: os.kill(pid, sig))
attempt("kill -1", lambda: os.kill(-1, 0) if False else None)
`,
      [String(s.serverPid)],
    );
    expect(r.stdout.split("\n").filter((l) => l.startsWith("kill ") && !l.startsWith("kill -1"))).toEqual([
      "kill 15 blocked PermissionError",
      "kill 9 blocked PermissionError",
      "kill 19 blocked PermissionError",
      "kill 0 blocked PermissionError",
    ]);
    // Still serving.
    expect((await k().fork("print('alive')\n")).stdout).toBe("alive\n");
  });

  it("kill(-1) from a script reaches only its own descendants: keeper and server survive, as in a plain start", async () => {
    const s = "import os, signal\nos.kill(-1, signal.SIGKILL)\nprint('after')\n";
    const r = await k().fork(s);
    const plain = await k().plain(s);
    expect([r.exitCode, r.signal, r.stdout]).toEqual([0, null, "after\n"]);
    expect([r.exitCode, r.signal, r.stdout]).toEqual([plain.exitCode, plain.signal, plain.stdout]);
    expect((await k().fork("print('alive')\n")).stdout).toBe("alive\n");
  });

  it("a previous run's leftovers are gone before the next run starts", async () => {
    const first = await k().fork(
      "import subprocess\nprint(subprocess.Popen(['sleep', '30'], start_new_session=False).pid, flush=True)\n",
    );
    const pid = Number(first.stdout.trim());
    expect(pid).toBeGreaterThan(0);
    expect(gone(pid)).toBe(true);
    const second = await k().fork(
      `${TRY}attempt("signal leftover", lambda: os.kill(int(sys.argv[1]), 0))\n`,
      [String(pid)],
    );
    expect(second.stdout).toBe("signal leftover blocked ProcessLookupError\n");
  });

  it("a previous run's secrets are not in the next run's memory as globals or environment", async () => {
    const s1 = "import os\nos.environ['RUN1_SECRET']='x'\nTOKEN='run1-token'\n";
    await k().fork(s1);
    const r = await k().fork(
      "import gc, os\nprint('RUN1_SECRET' in os.environ, any(isinstance(o, dict) and o.get('TOKEN') == 'run1-token' for o in gc.get_objects()))\n",
    );
    expect(r.stdout).toBe("False False\n");
  });

  it("a script that prints the setup-failure line and exits 125 is a script's exit 125, not a run that never started", async () => {
    // Were it taken for a setup failure, the step would be started again plain: the script twice.
    const s = `import sys\nsys.stderr.write(${JSON.stringify(`${KEEPER_SETUP_FAILURE}forged\n`)})\nsys.exit(125)\n`;
    const r = await k().fork(s);
    expect(r.spawnError).toBeUndefined();
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toBe(`${KEEPER_SETUP_FAILURE}forged\n`);
  });

  it("a script cannot kill its keeper (outside its domain), and what it started does not outlive its run", async () => {
    const s = `import os, signal, subprocess
child = subprocess.Popen(['sleep', '30'])
print(child.pid, flush=True)
try:
    os.kill(os.getppid(), signal.SIGKILL)
    print("killed its parent")
except OSError as e:
    print("refused", type(e).__name__)
`;
    const r = await k().fork(s);
    const plain = await k().plain(s);
    const lines = r.stdout.trim().split("\n");
    expect(lines[1]).toBe("refused PermissionError");
    expect(plain.stdout.trim().split("\n")[1]).toBe(lines[1]);
    expect(r.exitCode).toBe(0);
    const pid = Number(lines[0]);
    expect(pid).toBeGreaterThan(0);
    expect(gone(pid)).toBe(true);
    expect((await k().fork("print('alive')\n")).stdout).toBe("alive\n");
  });
});
