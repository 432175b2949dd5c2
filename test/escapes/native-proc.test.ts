/**
 * Attack: untrusted code reads the environment (API keys, the server token), command line, memory
 * or open files of Ratchet through /proc/<pid>. No /proc/<pid> folder gets a Landlock read rule
 * except, with --proc-self (or without any --read), the program's own, so nothing in the sandbox
 * (the program, nor anything it starts) reads another process's entries. The same holds where no
 * namespace is permitted (the rules do not depend on one).
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  confine,
  defaultReads,
  eventually,
  fallbackEnv,
  launch,
  outcomes,
  python,
  scratch,
  skipReason,
} from "./native-kit.js";

const SECRET = "sk-native-proc-test-4711";

const pythonAttack = `
import os, sys
target = int(sys.argv[1])
for name in ["environ", "cmdline", "maps", "mem", "status"]:
    try:
        data = open(f"/proc/{target}/{name}", "rb").read(4096)
        print(name, "leaked" if b"${SECRET}" in data else "ok")
    except OSError as e:
        print(name, "refused", e.errno)
try:
    print("fd", "ok", os.readlink(f"/proc/{target}/fd/0"))
except OSError as e:
    print("fd", "refused", e.errno)
try:
    print("self", "ok" if open("/proc/self/status").read().startswith("Name:") else "odd")
except OSError as e:
    print("self", "refused", e.errno)
`;

const nodeAttack = `
const fs = require("node:fs");
const target = Number(process.argv[2]);
for (const name of ["environ", "cmdline", "maps", "mem"]) {
  try { const d = fs.readFileSync("/proc/" + target + "/" + name); console.log(name, d.includes("${SECRET}") ? "leaked" : "ok"); }
  catch (e) { console.log(name, "refused", e.code); }
}
`;

describe.skipIf(skipReason !== undefined)("native: /proc of processes outside the sandbox", () => {
  const s = scratch("ratchet-native-proc-");
  writeFileSync(join(s.dir, "attack.py"), pythonAttack);
  writeFileSync(join(s.dir, "attack.js"), nodeAttack);
  afterAll(() => s.remove());
  /** A stand-in for Ratchet: a process outside the sandbox holding a secret in its environment. */
  const holder = () => {
    const p = spawn("sleep", ["60"], {
      env: { PATH: process.env.PATH, MODEL_API_KEY: SECRET },
      stdio: "ignore",
    });
    return { pid: p.pid as number, stop: () => p.kill("SIGKILL") };
  };
  const modes: [string, NodeJS.ProcessEnv][] = [
    ["with namespaces where permitted", process.env],
    ["without namespaces (the fallback)", fallbackEnv],
  ];

  for (const [mode, env] of modes) {
    it.skipIf(!python)(
      `Python reads neither Ratchet's nor its launcher's entries, /proc/self works (${mode})`,
      () => {
        const h = holder();
        try {
          const flags = [
            ...defaultReads(s.dir),
            "--proc-self",
            "--write",
            s.dir,
            "--write-file",
            "/dev/null",
          ];
          for (const target of [String(h.pid), "$PPID"]) {
            const r = launch(
              [...flags, "--", "/bin/bash", "-c", `exec ${python?.exe} -B attack.py ${target}`],
              {
                env: { ...env, MODEL_API_KEY: SECRET },
                cwd: s.dir,
              },
            );
            expect(r.status, r.stderr).toBe(0);
            const o = outcomes(r.stdout);
            for (const name of ["environ", "cmdline", "maps", "mem", "status", "fd"])
              expect(o[name], `${name} of ${target}`).toMatch(/^refused 13/);
            expect(o.self).toBe("ok");
          }
        } finally {
          h.stop();
        }
      },
    );

    it(`Node cannot read them (${mode})`, () => {
      const h = holder();
      try {
        const r = launch(
          [
            ...defaultReads(s.dir),
            "--write",
            s.dir,
            "--write-file",
            "/dev/null",
            "--",
            process.execPath,
            "attack.js",
            String(h.pid),
          ],
          { env, cwd: s.dir },
        );
        expect(r.status, r.stderr).toBe(0);
        expect(outcomes(r.stdout)).toEqual({
          environ: "refused EACCES",
          cmdline: "refused EACCES",
          maps: "refused EACCES",
          mem: "refused EACCES",
        });
      } finally {
        h.stop();
      }
    });

    it(`a grandchild (bash -c 'cat /proc/$PPID/environ') cannot either, also without --read (${mode})`, () => {
      const r = launch(
        [
          "--write",
          s.dir,
          "--write-file",
          "/dev/null",
          "--",
          "/bin/bash",
          "-c",
          'bash -c "cat /proc/$PPID/environ" ; cat /proc/$PPID/cmdline; echo end',
        ],
        { env: { ...env, MODEL_API_KEY: SECRET } },
      );
      expect(r.stdout).not.toContain(SECRET);
      expect(r.stdout).not.toContain("ratchet-confine");
      expect(r.stderr).toMatch(/Permission denied/);
      expect(r.stdout.trim()).toBe("end");
    });
  }

  it("with read confinement and no --proc-self, /proc is closed entirely; --read /proc/cpuinfo opens just that", () => {
    const base = [...defaultReads(), "--write", s.dir, "--write-file", "/dev/null", "--", "/bin/bash", "-c"];
    const closed = launch([
      ...base,
      "cat /proc/self/status >/dev/null 2>&1 && echo self ok || echo self refused",
    ]);
    expect(closed.stdout.trim()).toBe("self refused");
    const cpu = launch([
      "--read",
      "/proc/cpuinfo",
      ...base,
      "head -c 10 /proc/cpuinfo >/dev/null && echo cpu ok; cat /proc/meminfo >/dev/null 2>&1 || echo mem refused",
    ]);
    expect(outcomes(cpu.stdout)).toEqual({ cpu: "ok", mem: "refused" });
  });

  it("refuses a read or write root that would hold other processes' /proc folders", () => {
    for (const [flag, path] of [
      ["--read", "/"],
      ["--read", "/proc"],
      ["--read", "/proc/1"],
      ["--write", "/"],
    ]) {
      const r = launch([flag as string, path as string, "--", "/bin/true"]);
      expect(r.status).toBe(125);
      expect(r.stderr).toBe(`ratchet-confine: ${flag} ${path} would expose other processes' /proc entries\n`);
    }
  });

  it("the launcher's own environment stays out of reach while it supervises", async () => {
    const pidFile = join(s.dir, "sup.pid");
    // bash prints its parent (the supervisor), waits, then tries; the supervisor holds the secret.
    const child = spawn(
      confine as string,
      [
        "--write",
        s.dir,
        "--write-file",
        "/dev/null",
        "--",
        "/bin/bash",
        "-c",
        `echo $PPID > ${pidFile}; cat /proc/$PPID/environ; echo done`,
      ],
      { env: { ...process.env, MODEL_API_KEY: SECRET }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    const code = await new Promise<number | null>((r) => child.on("close", (c) => r(c)));
    expect(code).toBe(0);
    expect(Number(readFileSync(pidFile, "utf8"))).toBe(child.pid);
    expect(stdout).not.toContain(SECRET);
    expect(await eventually(() => stdout.includes("done"))).toBe(true);
  });
});
