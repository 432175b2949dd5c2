import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitGone } from "../testing/processes.js";
import { resolvePython, runProcess } from "./index.js";
import { readRoots } from "./read-roots.js";
import {
  allowedPythonLaunchers,
  detectSandbox,
  findConfine,
  findExecutable,
  isSandboxSetupFailure,
  nodeHasNetPermission,
  type SandboxInfo,
  sandboxDisabled,
  wrapCommand,
} from "./sandbox.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-sandbox-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const out = join(dir, "out");
const code = join(out, "code");
mkdirSync(code, { recursive: true });

const bwrapOnly = { ...process.env, RATCHET_SANDBOX: "bubblewrap" };

const both: SandboxInfo = {
  python: "bubblewrap",
  javascript: "node-permission",
  reason: "test",
  bwrapPath: "/usr/bin/bwrap",
  nodePermissionFlag: "--experimental-permission",
  nodeDisableWarning: true,
};
const none: SandboxInfo = { python: "none", javascript: "none", reason: "test" };

describe("wrapCommand", () => {
  it("runs python3 -B directly without a sandbox", () => {
    const w = wrapCommand(
      {
        language: "python",
        interpreter: "/usr/bin/python3",
        script: "main.py",
        args: ["/d1"],
        codeDir: code,
        outputDir: out,
      },
      none,
    );
    expect(w).toMatchObject({
      command: "/usr/bin/python3",
      args: ["-B", "main.py", "/d1"],
      protection: "none",
    });
  });

  it("wraps python in bubblewrap: read-only root, fresh /tmp, readable inputs, writable output last", () => {
    const w = wrapCommand(
      {
        language: "python",
        interpreter: "/usr/bin/python3",
        script: "main.py",
        args: [dir],
        codeDir: code,
        outputDir: out,
        readDirs: [dir, join(dir, "missing-folder"), "relative/path"],
      },
      both,
    );
    expect(w.protection).toBe("bubblewrap");
    expect(w.command).toBe("/usr/bin/bwrap");
    expect(w.args).toEqual([
      "--ro-bind",
      "/",
      "/",
      "--dev",
      "/dev",
      "--proc",
      "/proc",
      "--tmpfs",
      "/tmp",
      "--ro-bind",
      dir,
      dir,
      "--bind",
      out,
      out,
      "--unshare-pid",
      "--die-with-parent",
      "--new-session",
      "--chdir",
      code,
      "--",
      "/usr/bin/python3",
      "-B",
      "main.py",
      dir,
    ]);
  });

  it("wraps python in ratchet-confine: writes to the output folder, the private TMPDIR and /dev/null", () => {
    const w = wrapCommand(
      {
        language: "python",
        interpreter: "/usr/bin/python3",
        script: "main.py",
        args: ["/d1"],
        codeDir: code,
        outputDir: out,
        readDirs: [dir],
        tmpDir: "/tmp/ratchet-step-x",
      },
      { ...both, python: "landlock", confinePath: "/r/ratchet-confine", landlockAbi: 6 },
    );
    expect(w).toMatchObject({
      command: "/r/ratchet-confine",
      args: [
        "--write",
        out,
        "--write",
        "/tmp/ratchet-step-x",
        "--write-file",
        "/dev/null",
        "--",
        "/usr/bin/python3",
        "-B",
        "main.py",
        "/d1",
      ],
      protection: "landlock",
    });
  });

  it("runs node under the permission model with writes limited to the output folder", () => {
    const w = wrapCommand(
      {
        language: "javascript",
        interpreter: "/n/node",
        script: "main.mjs",
        args: ["/d"],
        codeDir: code,
        outputDir: out,
      },
      both,
    );
    expect(w).toMatchObject({
      command: "/n/node",
      args: [
        "--experimental-permission",
        "--disable-warning=ExperimentalWarning",
        "--allow-fs-read=*",
        `--allow-fs-write=${out}`,
        "main.mjs",
        "/d",
      ],
      protection: "node-permission",
    });
    expect(
      wrapCommand(
        {
          language: "javascript",
          interpreter: "/n/node",
          script: "main.mjs",
          args: [],
          codeDir: code,
          outputDir: out,
        },
        none,
      ),
    ).toMatchObject({ command: "/n/node", args: ["main.mjs"], protection: "none" });
  });

  it("allows the network where Node's permission model covers it (Node 25+), so the tool bridge stays reachable", () => {
    const w = wrapCommand(
      {
        language: "javascript",
        interpreter: "/n/node",
        script: "main.mjs",
        args: [],
        codeDir: code,
        outputDir: out,
      },
      { ...both, nodePermissionFlag: "--permission", nodeAllowNet: true },
    );
    expect(w.args).toEqual([
      "--permission",
      "--disable-warning=ExperimentalWarning",
      "--allow-fs-read=*",
      `--allow-fs-write=${out}`,
      "--allow-net",
      "main.mjs",
    ]);
  });
});

describe("helpers", () => {
  it("finds executables on a PATH, skipping non-executable files", () => {
    const bin = join(dir, "bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, "tool"), "#!/bin/sh\n");
    writeFileSync(join(bin, "plain"), "");
    chmodSync(join(bin, "tool"), 0o755);
    expect(findExecutable("tool", `/nonexistent:${bin}`)).toBe(join(bin, "tool"));
    expect(findExecutable("plain", bin)).toBeUndefined();
    expect(findExecutable("tool", undefined)).toBeUndefined();
    expect(findExecutable(join(bin, "tool"), "")).toBe(join(bin, "tool"));
  });

  it("reads RATCHET_SANDBOX=off", () => {
    expect(sandboxDisabled({ RATCHET_SANDBOX: "off" })).toBe(true);
    expect(sandboxDisabled({ RATCHET_SANDBOX: "NONE" })).toBe(true);
    expect(sandboxDisabled({})).toBe(false);
  });

  it("reads which Python launchers RATCHET_SANDBOX allows", () => {
    expect(allowedPythonLaunchers({})).toEqual(["landlock", "bubblewrap"]);
    expect(allowedPythonLaunchers({ RATCHET_SANDBOX: "Landlock" })).toEqual(["landlock"]);
    expect(allowedPythonLaunchers({ RATCHET_SANDBOX: "bwrap" })).toEqual(["bubblewrap"]);
    expect(allowedPythonLaunchers({ RATCHET_SANDBOX: "bubblewrap" })).toEqual(["bubblewrap"]);
  });

  it("tells a launcher's setup failure from the script's own failure", () => {
    expect(isSandboxSetupFailure("bubblewrap", 1, "bwrap: execvp python3: No such file or directory\n")).toBe(
      true,
    );
    expect(isSandboxSetupFailure("bubblewrap", 1, "Traceback (most recent call last):\n")).toBe(false);
    expect(isSandboxSetupFailure("none", 1, "bwrap: x")).toBe(false);
    expect(
      isSandboxSetupFailure(
        "landlock",
        127,
        "ratchet-confine: cannot run python3: No such file or directory\n",
      ),
    ).toBe(true);
    expect(isSandboxSetupFailure("landlock", 125, "ratchet-confine: landlock_restrict_self: x\n")).toBe(true);
    expect(isSandboxSetupFailure("landlock", 1, "ratchet-confine: x\n")).toBe(false);
    expect(isSandboxSetupFailure("landlock", 127, "Traceback (most recent call last):\n")).toBe(false);
  });
});

describe("detectSandbox (real probes)", () => {
  it("reports off when RATCHET_SANDBOX=off, without probing", async () => {
    const info = await detectSandbox({ env: { ...process.env, RATCHET_SANDBOX: "off" } });
    expect(info).toMatchObject({ python: "none", javascript: "none" });
    expect(info.reason).toMatch(/RATCHET_SANDBOX=off/);
  });

  it("reports none for python when only bubblewrap is allowed and bwrap is not on PATH", async () => {
    const info = await detectSandbox({
      env: { PATH: "/nonexistent", RATCHET_SANDBOX: "bubblewrap" },
      languages: ["python"],
    });
    expect(info.python).toBe("none");
    expect(info.reason).toMatch(/bwrap\) is not installed/);
    expect(info.reason).toMatch(/javascript: not probed/);
  });

  const bwrap = findExecutable("bwrap", process.env.PATH);
  it.skipIf(!bwrap)("confines a Python script's writes to its output folder under bubblewrap", async () => {
    const info = await detectSandbox({ languages: ["python"], env: bwrapOnly });
    if (info.python !== "bubblewrap") {
      console.warn(`bubblewrap cannot run here: ${info.reason}`);
      return;
    }
    writeFileSync(
      join(code, "main.py"),
      [
        "import os, sys",
        "open(os.path.join(os.environ['OUT'], 'inside.txt'), 'w').write('ok')",
        "try:",
        "    open(sys.argv[1] + '/outside.txt', 'w').write('escaped')",
        "    print('outside: written')",
        "except OSError as e:",
        "    print('outside: refused', e.errno)",
      ].join("\n"),
    );
    const python = findExecutable("python3", process.env.PATH) as string;
    const w = wrapCommand(
      {
        language: "python",
        interpreter: python,
        script: "main.py",
        args: [dir],
        codeDir: code,
        outputDir: out,
        readDirs: [dir],
      },
      info,
    );
    const r = await runProcess({
      command: w.command,
      args: w.args,
      cwd: code,
      env: { PATH: process.env.PATH ?? "", OUT: out },
    });
    expect(r.exitCode, r.combined).toBe(0);
    expect(r.stdout).toMatch(/outside: refused/);
  });

  it("confines a JavaScript script's writes under the Node permission model", async () => {
    const info = await detectSandbox({ languages: ["javascript"] });
    if (info.javascript !== "node-permission") {
      console.warn(`no Node permission model here: ${info.reason}`);
      return;
    }
    writeFileSync(
      join(code, "main.mjs"),
      [
        'import { writeFileSync } from "node:fs";',
        'writeFileSync(process.env.OUT + "/inside.txt", "ok");',
        'try { writeFileSync(process.argv[2] + "/outside.txt", "x"); console.log("outside: written"); }',
        'catch (e) { console.log("outside: refused", e.code); }',
      ].join("\n"),
    );
    const w = wrapCommand(
      {
        language: "javascript",
        interpreter: process.execPath,
        script: "main.mjs",
        args: [dir],
        codeDir: code,
        outputDir: out,
      },
      info,
    );
    const r = await runProcess({ command: w.command, args: w.args, cwd: code, env: { OUT: out } });
    expect(r.exitCode, r.combined).toBe(0);
    expect(r.stdout).toMatch(/outside: refused ERR_ACCESS_DENIED/);
    expect(r.stderr).toBe("");
  });
});

describe("the sandboxes keep loopback reachable (the tool bridge)", () => {
  let server: Server;
  let url = "";
  afterAll(() => server?.close());
  const listen = async () => {
    if (url) return url;
    server = createServer((_req, res) => res.end("bridge-ok"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/health`;
    return url;
  };

  const bwrap = findExecutable("bwrap", process.env.PATH);
  it.skipIf(!bwrap)("a Python script under bubblewrap reaches a loopback HTTP server", async () => {
    const info = await detectSandbox({ languages: ["python"], env: bwrapOnly });
    if (info.python !== "bubblewrap") {
      console.warn(`bubblewrap cannot run here: ${info.reason}`);
      return;
    }
    writeFileSync(
      join(code, "net.py"),
      "import os, urllib.request\nprint(urllib.request.urlopen(os.environ['URL'], timeout=10).read().decode())\n",
    );
    const python = findExecutable("python3", process.env.PATH) as string;
    const w = wrapCommand(
      { language: "python", interpreter: python, script: "net.py", args: [], codeDir: code, outputDir: out },
      info,
    );
    expect(w.protection).toBe("bubblewrap");
    const r = await runProcess({
      command: w.command,
      args: w.args,
      cwd: code,
      env: { PATH: process.env.PATH ?? "", URL: await listen() },
    });
    expect(r.exitCode, r.combined).toBe(0);
    expect(r.stdout.trim()).toBe("bridge-ok");
  });

  it("a JavaScript script under the Node permission model can fetch from loopback", async () => {
    const info = await detectSandbox({ languages: ["javascript"] });
    expect(Boolean(info.nodeAllowNet)).toBe(info.javascript === "node-permission" && nodeHasNetPermission());
    if (info.javascript !== "node-permission") {
      console.warn(`no Node permission model here: ${info.reason}`);
      return;
    }
    writeFileSync(join(code, "net.mjs"), "console.log(await (await fetch(process.env.URL)).text());\n");
    const w = wrapCommand(
      {
        language: "javascript",
        interpreter: process.execPath,
        script: "net.mjs",
        args: [],
        codeDir: code,
        outputDir: out,
      },
      info,
    );
    expect(w.protection).toBe("node-permission");
    const r = await runProcess({ command: w.command, args: w.args, cwd: code, env: { URL: await listen() } });
    expect(r.exitCode, r.combined).toBe(0);
    expect(r.stdout.trim()).toBe("bridge-ok");
  });
});

describe("ratchet-confine (Landlock + seccomp, real kernel)", () => {
  // The real interpreter (python3 on PATH may be a version manager's shim) and its read roots.
  let python = findExecutable("python3", process.env.PATH) as string;
  let reads: string[] = [];
  beforeAll(async () => {
    const found = await resolvePython();
    if (found) python = found.executable;
    reads = readRoots({
      interpreters: found?.roots ?? [],
      own: [dir],
      extra: [],
      forbid: { home: process.env.HOME, secretDirs: [] },
    });
  });
  const confine = findConfine();
  const landlock = async (): Promise<SandboxInfo | undefined> => {
    const info = await detectSandbox({
      languages: ["python"],
      env: { ...process.env, RATCHET_SANDBOX: "landlock" },
    });
    if (info.python !== "landlock") {
      console.warn(`Landlock cannot confine scripts here: ${info.reason}`);
      return undefined;
    }
    return info;
  };
  const run = async (source: string, info: SandboxInfo, extra: { timeoutMs?: number } = {}) => {
    const tmp = mkdtempSync(join(tmpdir(), "ratchet-step-"));
    writeFileSync(join(code, "ll.py"), source);
    const w = wrapCommand(
      {
        language: "python",
        interpreter: python,
        script: "ll.py",
        args: [dir],
        codeDir: code,
        outputDir: out,
        tmpDir: tmp,
        readRoots: reads,
      },
      info,
    );
    expect(w.protection).toBe("landlock");
    try {
      return await runProcess({
        command: w.command,
        args: w.args,
        cwd: code,
        env: { PATH: process.env.PATH ?? "", OUT: out, TMPDIR: tmp, RATCHET_PID: String(process.pid) },
        timeoutMs: extra.timeoutMs ?? 30_000,
        killGraceMs: 500,
      });
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  };

  it.skipIf(process.platform !== "linux")("is built by npm run build", () => {
    expect(confine, "dist/native/ratchet-confine is missing: run npm run build").toBeTruthy();
  });

  it("confines writes to the output folder, TMPDIR and /dev/null; reads stay open", async () => {
    const info = await landlock();
    if (!info) return;
    const r = await run(
      [
        "import os, sys, tempfile",
        "def attempt(label, fn):",
        "    try:",
        "        fn()",
        "        print(label, 'ok')",
        "    except OSError as e:",
        "        print(label, 'refused', e.errno)",
        "attempt('inside', lambda: open(os.path.join(os.environ['OUT'], 'inside.txt'), 'w').write('ok'))",
        "attempt('outside', lambda: open(sys.argv[1] + '/outside.txt', 'w').write('x'))",
        "attempt('tmp', lambda: open('/tmp/ratchet-landlock-escape.txt', 'w').write('x'))",
        "attempt('tempfile', lambda: tempfile.NamedTemporaryFile().write(b'x'))",
        "attempt('devnull', lambda: open(os.devnull, 'w').write('x'))",
        "attempt('mkdir-outside', lambda: os.mkdir(sys.argv[1] + '/newdir'))",
        "attempt('rename-out', lambda: os.rename(os.path.join(os.environ['OUT'], 'inside.txt'), sys.argv[1] + '/moved.txt'))",
        "attempt('read', lambda: open(__file__).read())",
      ].join("\n"),
      info,
    );
    expect(r.exitCode, r.combined).toBe(0);
    expect(r.stdout).toContain("inside ok");
    // EACCES from Landlock, or EROFS where the launcher's read-only mount namespace answers first.
    expect(r.stdout).toMatch(/outside refused (13|30)/);
    expect(r.stdout).toMatch(/tmp refused (13|30)/);
    expect(r.stdout).toContain("tempfile ok");
    expect(r.stdout).toContain("devnull ok");
    expect(r.stdout).toMatch(/mkdir-outside refused (13|30)/);
    expect(r.stdout).toMatch(/rename-out refused (13|18)/);
    expect(r.stdout).toContain("read ok");
    expect(existsSync(join(dir, "outside.txt"))).toBe(false);
    expect(existsSync("/tmp/ratchet-landlock-escape.txt")).toBe(false);
    expect(existsSync(join(dir, "newdir"))).toBe(false);
  });

  it("keeps the script in its process group and away from other processes' signals", async () => {
    const info = await landlock();
    if (!info) return;
    const r = await run(
      [
        "import os",
        "for label, fn in [('setsid', os.setsid), ('setpgid', lambda: os.setpgid(0, 0))]:",
        "    try:",
        "        fn()",
        "        print(label, 'ok')",
        "    except OSError as e:",
        "        print(label, 'refused', e.errno)",
        "try:",
        "    os.kill(int(os.environ['RATCHET_PID']), 0)",
        "    print('signal ok')",
        "except OSError as e:",
        "    print('signal refused', e.errno)",
      ].join("\n"),
      info,
    );
    expect(r.exitCode, r.combined).toBe(0);
    expect(r.stdout).toContain("setsid refused 1");
    expect(r.stdout).toContain("setpgid refused 1");
    // Signal scoping needs Landlock ABI 6 (Linux 6.12).
    if ((info.landlockAbi ?? 0) >= 6) expect(r.stdout).toContain("signal refused 1");
  });

  it("passes the script's exit status and signal through", async () => {
    const info = await landlock();
    if (!info) return;
    expect((await run("raise SystemExit(3)", info)).exitCode).toBe(3);
    const killed = await run("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)", info);
    expect(killed.signal).toBe("SIGTERM");
    const missing = await runProcess({
      command: info.confinePath as string,
      args: ["--write", out, "--", "/nonexistent/python3"],
    });
    expect(missing.exitCode).toBe(127);
    expect(isSandboxSetupFailure("landlock", missing.exitCode, missing.stderr)).toBe(true);
  });

  it("a time-out kills everything the script started", async () => {
    const info = await landlock();
    if (!info) return;
    const pidFile = join(out, "grandchild.pid");
    rmSync(pidFile, { force: true });
    const r = await run(
      [
        "import os, subprocess, time",
        "p = subprocess.Popen(['sleep', '60'])",
        `open(${JSON.stringify(pidFile)}, 'w').write(str(p.pid))`,
        "time.sleep(60)",
      ].join("\n"),
      info,
      { timeoutMs: 1500 },
    );
    expect(r.timedOut).toBe(true);
    const pid = Number(readFileSync(pidFile, "utf8"));
    expect(await waitGone(pid)).toBe(true);
  });

  it("when Ratchet is killed with SIGKILL, the script and its children die too", async () => {
    const info = await landlock();
    if (!info) return;
    const pidFile = join(out, "orphan.pids");
    rmSync(pidFile, { force: true });
    writeFileSync(
      join(code, "orphan.py"),
      [
        "import os, subprocess, time",
        "p = subprocess.Popen(['sleep', '60'])",
        `open(${JSON.stringify(pidFile)}, 'w').write(f'{os.getpid()} {p.pid}')`,
        "time.sleep(60)",
      ].join("\n"),
    );
    // A stand-in for the CLI: spawns the launcher as the runner does (its own group), then waits.
    const parent = spawn(
      process.execPath,
      [
        "-e",
        `require("node:child_process").spawn(${JSON.stringify(info.confinePath)}, ${JSON.stringify([
          "--write",
          out,
          "--",
          python,
          "-B",
          "orphan.py",
        ])}, { cwd: ${JSON.stringify(code)}, detached: true, stdio: "ignore" }); setInterval(() => {}, 1000);`,
      ],
      { stdio: "ignore" },
    );
    const until = Date.now() + 10_000;
    while (!existsSync(pidFile) || readFileSync(pidFile, "utf8").split(" ").length < 2) {
      if (Date.now() > until) throw new Error("the script never started");
      await new Promise((r) => setTimeout(r, 50));
    }
    const [script, child] = readFileSync(pidFile, "utf8").split(" ").map(Number) as [number, number];
    parent.kill("SIGKILL");
    expect(await waitGone(script as number)).toBe(true);
    expect(await waitGone(child as number)).toBe(true);
  });

  it("a script under Landlock reaches a loopback HTTP server (the tool bridge)", async () => {
    const info = await landlock();
    if (!info) return;
    const server = createServer((_req, res) => res.end("bridge-ok"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/health`;
      const r = await run(
        `import urllib.request\nprint(urllib.request.urlopen(${JSON.stringify(url)}, timeout=10).read().decode())`,
        info,
      );
      expect(r.exitCode, r.combined).toBe(0);
      expect(r.stdout.trim()).toBe("bridge-ok");
    } finally {
      server.close();
    }
  });
});
