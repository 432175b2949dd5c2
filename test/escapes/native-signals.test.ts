/**
 * Attack: a script kills Ratchet (`process.kill(process.ppid, "SIGKILL")`) or another process
 * outside its sandbox. Landlock's signal scope (ABI 6, Linux 6.12) refuses it with EPERM for every
 * language; inside the sandbox signals still work. On older kernels --probe says
 * `feature signals no` (documented: a pid namespace launcher such as bubblewrap is then needed).
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isGone } from "../../src/testing/processes.js";
import { launch, outcomes, probe, python, scratch, skipReason } from "./native-kit.js";

describe.skipIf(skipReason !== undefined)("native: signals to processes outside the sandbox", () => {
  const s = scratch("ratchet-native-signals-");
  afterAll(() => s.remove());
  const scoped = (probe?.abi ?? 0) >= 6;
  const victim = () => {
    const p = spawn("sleep", ["60"], { stdio: "ignore" });
    return { pid: p.pid as number, stop: () => p.kill("SIGKILL") };
  };
  const flags = ["--write", s.dir, "--write-file", "/dev/null", "--"];

  it("the probe says whether signals are scoped on this kernel", () => {
    expect(probe?.features.signals).toBe(scoped);
  });

  it.skipIf(!scoped || !python)(
    "Python gets EPERM for its parent and an outside process, signals its own child",
    () => {
      writeFileSync(
        join(s.dir, "kill.py"),
        [
          "import os, signal, subprocess, sys",
          "for label, pid in [('parent', os.getppid()), ('victim', int(sys.argv[1]))]:",
          "    try:",
          "        os.kill(pid, signal.SIGKILL)",
          "        print(label, 'ok')",
          "    except OSError as e:",
          "        print(label, 'refused', e.errno)",
          "c = subprocess.Popen(['sleep', '30'])",
          "os.kill(c.pid, signal.SIGKILL)",
          "print('own', 'ok' if c.wait() == -9 else 'odd')",
        ].join("\n"),
      );
      const v = victim();
      try {
        const r = launch([...flags, python?.exe as string, "-B", join(s.dir, "kill.py"), String(v.pid)]);
        expect(r.status, r.stderr).toBe(0);
        expect(outcomes(r.stdout)).toEqual({ parent: "refused 1", victim: "refused 1", own: "ok" });
        expect(isGone(v.pid)).toBe(false);
      } finally {
        v.stop();
      }
    },
  );

  it.skipIf(!scoped)("Node's process.kill(process.ppid, 'SIGKILL') fails", () => {
    const v = victim();
    try {
      const js = `for (const [l, p] of [["parent", process.ppid], ["victim", ${v.pid}]]) {
        try { process.kill(p, "SIGKILL"); console.log(l, "ok"); } catch (e) { console.log(l, "refused", e.code); } }`;
      const r = launch([...flags, process.execPath, "-e", js]);
      expect(r.status, r.stderr).toBe(0);
      expect(outcomes(r.stdout)).toEqual({ parent: "refused EPERM", victim: "refused EPERM" });
      expect(isGone(v.pid)).toBe(false);
    } finally {
      v.stop();
    }
  });

  it.skipIf(!scoped)("bash's kill -9 $PPID and kill of an outside pid fail", () => {
    const v = victim();
    try {
      const r = launch([
        ...flags,
        "/bin/bash",
        "-c",
        `kill -9 $PPID 2>/dev/null || echo parent refused; kill -9 ${v.pid} 2>/dev/null || echo victim refused`,
      ]);
      expect(r.status, r.stderr).toBe(0);
      expect(outcomes(r.stdout)).toEqual({ parent: "refused", victim: "refused" });
      expect(isGone(v.pid)).toBe(false);
    } finally {
      v.stop();
    }
  });
});
