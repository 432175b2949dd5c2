/**
 * Conformance: the same probe scripts started plainly through the door and run in a forkserver
 * started through the door with the same confinement; every observable compared.
 */
import { describe, expect, it } from "vitest";
import { useForkKit } from "../../test/helpers/fork-kit.js";
import { fitsForkserver } from "./forkserver.js";

const k = useForkKit("conformance suite");

const PROBE = `import json, os, sys
mods = sorted(sys.modules)
import random
stdin = sys.stdin.read()
def _open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False
def err(path):
    try:
        open(path).read()
        return "readable"
    except OSError as e:
        return type(e).__name__ + " " + str(e.errno)
print(json.dumps({
    "argv": sys.argv,
    "file": __file__,
    "name": __name__,
    "path0": sys.path[0],
    "path": sys.path,
    "cwd": os.getcwd(),
    "env": dict(os.environ),
    "stdin": stdin,
    "stdin_tty": os.isatty(0),
    "mods": mods,
    "main_keys": sorted(k for k in globals() if k not in ("mods", "stdin", "err", "random", "_open")),
    "flags": str(sys.flags),
    "executable": sys.executable,
    "random": random.random(),
    "urandom": os.urandom(16).hex(),
    "outside": err(os.path.join(os.path.dirname(os.path.dirname(__file__)), "secret.txt")),
    "proc1": err("/proc/1/environ"),
    "write_outside": err.__name__ and (lambda: (open("/tmp/ratchet-fs-probe", "w"), "written")[1])() if False else None,
    "uid": os.getuid(),
    "pgrp_is_leader": os.getpgrp() == os.getpid(),
    "umask": os.umask(0o22),
    "limits": __import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE),
    "fds": [fd for fd in range(64) if _open(fd)],
    "proc_self": err("/proc/self/status")[:15],
}))
sys.stderr.write("to stderr\\n")
`;

type Probe = Record<string, unknown>;
const parse = (s: string): Probe => JSON.parse(s) as Probe;

describe("forkserver conformance (plain start vs forked child, same confinement)", () => {
  it("every observable of a probe script matches a plain start", async () => {
    const plain = await k().plain(PROBE, ["dep1", "dep 2"]);
    const fork = await k().fork(PROBE, ["dep1", "dep 2"]);
    expect(plain.exitCode, plain.stderr).toBe(0);
    expect(fork.exitCode, fork.stderr).toBe(0);
    expect(fork.stderr).toBe(plain.stderr);
    const p = parse(plain.stdout);
    const f = parse(fork.stdout);
    for (const key of [
      "argv",
      "file",
      "name",
      "path0",
      "path",
      "cwd",
      "env",
      "stdin",
      "stdin_tty",
      "main_keys",
      "flags",
      "executable",
      "outside",
      "proc1",
      "uid",
      "umask",
      "limits",
      "fds",
      "pgrp_is_leader",
    ])
      expect({ key, value: f[key] }).toEqual({ key, value: p[key] });
    // The file outside the read roots and other processes' /proc fail the same way both ways.
    expect(p.outside).toMatch(/^PermissionError/);
    expect(p.proc1).toMatch(/^PermissionError/);
    // Modules loaded before the script ran: exactly a plain start's (the server's own are dropped).
    expect(f.mods).toEqual(p.mods);
  });

  it("its parent, process group, session, parent-death signal, subreaper bit, signal mask and handlers match", async () => {
    const s = `import ctypes, errno, json, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def prctl_get(op):
    v = ctypes.c_int(-1)
    libc.prctl(op, ctypes.byref(v), 0, 0, 0)
    return v.value
def outcome(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
ppid = os.getppid()
# An orphan is re-parented to the script's parent (a child subreaper both ways).
r, w = os.pipe()
if os.fork() == 0:
    if os.fork() == 0:
        while os.getppid() != ppid and os.getppid() != 1:
            time.sleep(0.01)
        os.write(w, str(os.getppid()).encode())
        os._exit(0)
    os._exit(0)
orphan_parent = int(os.read(r, 32))
print(json.dumps({
    "signal parent": outcome(lambda: os.kill(ppid, 0)),
    "read parent": outcome(lambda: open(f"/proc/{ppid}/stat").read()),
    "leads its group": os.getpgrp() == os.getpid(),
    "session is the group": os.getsid(0) == os.getpgrp(),
    "setsid": outcome(os.setsid),
    "setpgid": outcome(lambda: os.setpgid(0, 0)),
    "pdeathsig": prctl_get(2),
    "subreaper": prctl_get(37),
    "orphan's parent is the script's": orphan_parent == ppid,
    "mask": sorted(int(x) for x in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
    "pending": sorted(int(x) for x in signal.sigpending()),
    "handlers": {str(int(x)): str(signal.getsignal(x)) for x in signal.valid_signals() if x not in (signal.SIGKILL, signal.SIGSTOP)},
    "nice": os.nice(0),
}, sort_keys=True))
`;
    const plain = await k().plain(s);
    const fork = await k().fork(s);
    expect(plain.exitCode, plain.stderr).toBe(0);
    expect(fork.exitCode, fork.stderr).toBe(0);
    expect(parse(fork.stdout)).toEqual(parse(plain.stdout));
    const p = parse(plain.stdout);
    // A plain start's parent is the launcher's supervisor, outside the script's domain: the
    // script cannot signal or read it; a forked script's parent is its keeper, equally out of reach.
    expect(p["signal parent"]).toBe("EPERM");
    expect(p["read parent"]).toBe("EACCES");
    expect(p["orphan's parent is the script's"]).toBe(true);
    expect(p.pdeathsig).toBe(9);
  });

  it("stdout and stderr bytes, and exit codes, match", async () => {
    const script = `import sys
sys.stdout.write("a\\u00e9\\n" * 3)
sys.stdout.flush()
sys.stderr.buffer.write(b"\\xff raw\\n")
sys.exit(int(sys.argv[1]))
`;
    for (const code of ["0", "3", "255"]) {
      const plain = await k().plain(script, [code]);
      const fork = await k().fork(script, [code]);
      expect([fork.exitCode, fork.signal, fork.stdout, fork.stderr]).toEqual([
        plain.exitCode,
        plain.signal,
        plain.stdout,
        plain.stderr,
      ]);
      expect(fork.exitCode).toBe(Number(code));
    }
  });

  it("an uncaught exception, sys.exit('text') and atexit handlers behave as in a plain start", async () => {
    const scripts = [
      "raise ValueError('boom')\n",
      "import sys\nsys.exit('bye')\n",
      "import atexit, sys\natexit.register(lambda: print('at exit'))\nprint('body')\n",
      "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()\n",
    ];
    for (const s of scripts) {
      const plain = await k().plain(s);
      const fork = await k().fork(s);
      expect([fork.exitCode, fork.stdout, fork.stderr]).toEqual([plain.exitCode, plain.stdout, plain.stderr]);
    }
  });

  it("death by a signal reports the same signal", async () => {
    const s = "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n";
    const plain = await k().plain(s);
    const fork = await k().fork(s);
    expect(plain.signal).toBe("SIGTERM");
    expect([fork.exitCode, fork.signal]).toEqual([plain.exitCode, plain.signal]);
    const segv = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n";
    const p2 = await k().plain(segv);
    const f2 = await k().fork(segv);
    expect([f2.exitCode, f2.signal]).toEqual([p2.exitCode, p2.signal]);
  });

  it("random and os.urandom differ between two runs", async () => {
    const a = parse((await k().fork(PROBE)).stdout);
    const b = parse((await k().fork(PROBE)).stdout);
    expect(a.random).not.toEqual(b.random);
    expect(a.urandom).not.toEqual(b.urandom);
  });

  it("no module state carries over from one run to the next", async () => {
    const first = `import builtins, json, os, sys
builtins.LEAK = 1
json.LEAK = 2
sys.LEAK = 3
os.environ["LEAKED"] = "1"
GLOBAL = 4
`;
    const second = `import builtins, json, os, sys
print(hasattr(builtins, "LEAK"), hasattr(json, "LEAK"), hasattr(sys, "LEAK"), "LEAKED" in os.environ, "GLOBAL" in globals())
`;
    expect((await k().fork(first)).exitCode).toBe(0);
    const r = await k().fork(second);
    expect(r.stdout).toBe("False False False False False\n");
    expect((await k().plain(second)).stdout).toBe(r.stdout);
  });

  it("writes outside the write roots fail the same way; inside they work", async () => {
    const s = `import os
def w(p):
    try:
        open(p, "w").write("x")
        return "ok"
    except OSError as e:
        return type(e).__name__
print(w(os.path.join(os.environ["STEP_OUTPUT_DIR"], "o.txt")), w("/tmp/ratchet-fs-outside.txt"), w("main2.py"))
`;
    const plain = await k().plain(s);
    const fork = await k().fork(s);
    expect(fork.stdout).toBe(plain.stdout);
    expect(plain.stdout).toMatch(/^ok (PermissionError|OSError) (PermissionError|OSError)\n$/);
  });

  it("the time limit ends the run as the launcher's does (exit 124 and its line)", async () => {
    const server = await k().server();
    const { writeFileSync } = await import("node:fs");
    writeFileSync(`${k().codeDir}/main.py`, "import time\ntime.sleep(30)\n");
    const t = await server.run({
      argv: ["main.py"],
      cwd: k().codeDir,
      env: k().confinement.env,
      timeoutMs: 300,
      killGraceMs: 200,
      maxCaptureBytes: 4096,
    });
    expect(t.timedOut).toBe(true);
    expect(t.exitCode).toBe(124);
    expect(t.stderr).toMatch(/^ratchet-confine: timed out after 300 ms$/m);
    // The server still serves the next run.
    expect((await k().fork("print('next')\n")).stdout).toBe("next\n");
  });

  it("cancel stops the run and everything it started", async () => {
    const server = await k().server();
    const { writeFileSync } = await import("node:fs");
    writeFileSync(
      `${k().codeDir}/main.py`,
      "import subprocess, time\nprint(subprocess.Popen(['sleep', '30']).pid, flush=True)\ntime.sleep(30)\n",
    );
    const ac = new AbortController();
    const running = server.run({
      argv: ["main.py"],
      cwd: k().codeDir,
      env: k().confinement.env,
      timeoutMs: 20_000,
      killGraceMs: 200,
      maxCaptureBytes: 4096,
      signal: ac.signal,
    });
    setTimeout(() => ac.abort(), 300);
    const r = await running;
    expect(r.cancelled).toBe(true);
    // What the script started is gone too.
    const child = Number(r.stdout.trim());
    expect(child).toBeGreaterThan(0);
    expect(() => process.kill(child, 0)).toThrow(/ESRCH/);
  });
});

it("a run cancelled before it is sent starts nothing (a cancel ahead of the request is not dropped), and the server serves the next", async () => {
  const server = await k().server();
  const { existsSync, writeFileSync } = await import("node:fs");
  const marker = `${k().codeDir}/ran.txt`;
  writeFileSync(
    `${k().codeDir}/main.py`,
    `open(${JSON.stringify(marker)}, "w").write("ran")\nimport time\ntime.sleep(30)\n`,
  );
  const ac = new AbortController();
  ac.abort();
  const r = await server.run({
    argv: ["main.py"],
    cwd: k().codeDir,
    env: k().confinement.env,
    timeoutMs: 20_000,
    killGraceMs: 200,
    maxCaptureBytes: 4096,
    signal: ac.signal,
  });
  expect(r).toMatchObject({ cancelled: true, exitCode: null, timedOut: false });
  expect(r.spawnError).toBeUndefined();
  expect(existsSync(marker)).toBe(false);
  expect((await k().fork("print('next')\n")).stdout).toBe("next\n");
  expect(existsSync(marker)).toBe(false);
});

describe("the known differences, and the fallback that covers them", () => {
  it("/proc/self is readable in a plain start but not in a forked child (the server has no --proc-self)", async () => {
    const s =
      "import os\ntry:\n    open('/proc/self/status').read()\n    print('readable')\nexcept OSError as e:\n    print(type(e).__name__)\n";
    expect((await k().plain(s)).stdout).toBe("readable\n");
    expect((await k().fork(s)).stdout).toBe("PermissionError\n");
    expect(fitsForkserver(s)).toMatch(/\/proc/);
  });

  it("the process group is the server's, not led by the script's parent (a plain start's is its supervisor's)", async () => {
    const s = "import os\nprint(os.getpgrp() == os.getppid(), os.getsid(0) == os.getppid())\n";
    expect((await k().plain(s)).stdout).toBe("True True\n");
    expect((await k().fork(s)).stdout).toBe("False False\n");
  });

  it("the str hash seed is the server's for every run it serves (a plain start draws one per run)", async () => {
    const s = "print(hash('ratchet'))\n";
    const [f1, f2] = [(await k().fork(s)).stdout, (await k().fork(s)).stdout];
    const [p1, p2] = [(await k().plain(s)).stdout, (await k().plain(s)).stdout];
    expect(f1).toBe(f2);
    expect(p1).not.toBe(p2);
  });

  it("sends scripts that read /proc or the hash seed to a plain start, with the reason", () => {
    expect(fitsForkserver("open('/proc/self/status')")).toMatch(/\/proc/);
    expect(fitsForkserver("import os; os.environ['PYTHONHASHSEED']")).toMatch(/hash seed/);
    expect(fitsForkserver("print(1)")).toBeUndefined();
  });
});
