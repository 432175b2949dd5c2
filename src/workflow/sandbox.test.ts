import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runProcess } from "../exec/index.js";
import {
  detectSandbox,
  findExecutable,
  isBwrapSetupFailure,
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
    expect(w).toEqual({ command: "/usr/bin/python3", args: ["-B", "main.py", "/d1"], protection: "none" });
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
    expect(w).toEqual({
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
    ).toEqual({ command: "/n/node", args: ["main.mjs"], protection: "none" });
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

  it("tells a bubblewrap setup failure from the script's own exit 1", () => {
    expect(isBwrapSetupFailure("bubblewrap", 1, "bwrap: execvp python3: No such file or directory\n")).toBe(
      true,
    );
    expect(isBwrapSetupFailure("bubblewrap", 1, "Traceback (most recent call last):\n")).toBe(false);
    expect(isBwrapSetupFailure("none", 1, "bwrap: x")).toBe(false);
  });
});

describe("detectSandbox (real probes)", () => {
  it("reports off when RATCHET_SANDBOX=off, without probing", async () => {
    const info = await detectSandbox({ env: { ...process.env, RATCHET_SANDBOX: "off" } });
    expect(info).toMatchObject({ python: "none", javascript: "none" });
    expect(info.reason).toMatch(/RATCHET_SANDBOX=off/);
  });

  it("reports none for python when bwrap is not on PATH", async () => {
    const info = await detectSandbox({ env: { PATH: "/nonexistent" }, languages: ["python"] });
    expect(info.python).toBe("none");
    expect(info.reason).toMatch(/bwrap\) is not installed/);
    expect(info.reason).toMatch(/javascript: not probed/);
  });

  const bwrap = findExecutable("bwrap", process.env.PATH);
  it.skipIf(!bwrap)("confines a Python script's writes to its output folder under bubblewrap", async () => {
    const info = await detectSandbox({ languages: ["python"] });
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
    const info = await detectSandbox({ languages: ["python"] });
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
