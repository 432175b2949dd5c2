import { chmodSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { overEachTransport } from "../../test/helpers/transports.js";
import { isRatchetError, truncationMarker } from "../core/index.js";
import { buildEnv, MINIMAL_ENV_KEYS } from "./env.js";
import { runProcess } from "./process-runner.js";
import type { RunRequest } from "./types.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-exec-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const env = buildEnv({ inherit: "minimal" });
const sh = (script: string, extra: Partial<RunRequest> = {}) =>
  runProcess({ command: "sh", args: ["-c", script], env, ...extra });
/** Runs a Node one-liner (exact bytes, no shell quoting games). */
const node = (code: string, extra: Partial<RunRequest> = {}) =>
  runProcess({ command: process.execPath, args: ["-e", code], env, ...extra });

overEachTransport((transport) => {
  describe("runProcess: exit status and capture", () => {
    it("reports exit 0 and the pid", async () => {
      const r = await runProcess({ command: "true", env });
      expect(r).toMatchObject({
        exitCode: 0,
        signal: null,
        timedOut: false,
        cancelled: false,
        truncated: false,
      });
      expect(r.spawnError).toBeUndefined();
      expect(typeof r.pid).toBe("number");
      expect(r.durationMs).toBeGreaterThanOrEqual(0);
    });

    it("reports a non-zero exit as a result, not an error", async () => {
      const r = await sh("exit 3");
      expect(r.exitCode).toBe(3);
      expect(r.spawnError).toBeUndefined();
    });

    it("reports death by signal with exitCode null", async () => {
      const r = await sh("kill -TERM $$");
      expect(r).toMatchObject({ exitCode: null, signal: "SIGTERM", timedOut: false, cancelled: false });
    });

    it("captures stdout and stderr separately and combined in arrival order", async () => {
      const r = await node(
        "process.stdout.write('out1 ');" +
          "setTimeout(() => process.stderr.write('err1 '), 30);" +
          "setTimeout(() => process.stdout.write('out2'), 60);",
      );
      expect(r.stdout).toBe("out1 out2");
      expect(r.stderr).toBe("err1 ");
      expect(r.combined).toBe("out1 err1 out2");
      expect([r.stdoutBytes, r.stderrBytes, r.combinedBytes]).toEqual([9, 5, 14]);
    });

    it("runs in the given cwd", async () => {
      const r = await runProcess({ command: "pwd", cwd: dir, env });
      expect(r.stdout.trim()).toBe(realpathSync(dir));
    });
  });

  describe("runProcess: stdin", () => {
    it("writes a string then closes stdin", async () => {
      const r = await runProcess({ command: "cat", env, stdin: "hello\nworld\n" });
      expect(r.stdout).toBe("hello\nworld\n");
    });

    it("writes raw bytes", async () => {
      const r = await runProcess({ command: "cat", env, stdin: new Uint8Array([0, 1, 2, 255]) });
      expect(r.stdoutBytes).toBe(4);
    });

    it("gives /dev/null when no stdin is set (a reader sees EOF, nothing hangs)", async () => {
      const r = await runProcess({ command: "cat", env, timeoutMs: 10_000 });
      expect(r).toMatchObject({ exitCode: 0, stdout: "", timedOut: false });
    });

    it("survives a child that never reads a large stdin", async () => {
      const r = await runProcess({ command: "true", env, stdin: "x".repeat(4 * 1024 * 1024) });
      expect(r.exitCode).toBe(0);
    });
  });

  describe("runProcess: environment", () => {
    it("gives the child exactly the env it was given", async () => {
      const r = await runProcess({ command: "/usr/bin/env", env: { FOO: "bar", EMPTY: "" } });
      expect(r.stdout.split("\n").filter(Boolean).sort()).toEqual(["EMPTY=", "FOO=bar"]);
    });

    it("defaults to the minimal env, never the whole parent env", async () => {
      process.env["RATCHET_EXEC_LEAK_TEST"] = "leaked";
      try {
        const r = await runProcess({ command: "/usr/bin/env" });
        const keys = r.stdout
          .split("\n")
          .filter(Boolean)
          .map((l) => l.slice(0, l.indexOf("=")));
        expect(keys.length).toBeGreaterThan(0);
        for (const k of keys) expect(MINIMAL_ENV_KEYS).toContain(k);
      } finally {
        delete process.env["RATCHET_EXEC_LEAK_TEST"];
      }
    });

    it("looks the command up in the PATH of the child's env", async () => {
      const bin = mkdtempSync(join(dir, "bin-"));
      const tool = join(bin, "ratchet-tool");
      writeFileSync(tool, "#!/bin/sh\necho tool-ran\n");
      chmodSync(tool, 0o755);
      const found = await runProcess({ command: "ratchet-tool", env: { PATH: `${bin}:/usr/bin:/bin` } });
      expect(found.stdout).toBe("tool-ran\n");
      const missing = await runProcess({ command: "ratchet-tool", env: { PATH: "/usr/bin:/bin" } });
      expect(missing.spawnError?.code).toBe("ENOENT");
      expect(missing.spawnError?.message).toContain("PATH=/usr/bin:/bin");
    });
  });

  describe("runProcess: caps", () => {
    it("keeps head and tail beyond the cap and counts the dropped bytes", async () => {
      const r = await node("process.stdout.write('H'.repeat(50) + 'M'.repeat(100) + 'T'.repeat(50))", {
        maxCaptureBytes: 100,
      });
      expect(r.stdout).toBe("H".repeat(50) + truncationMarker(100) + "T".repeat(50));
      expect(r.combined).toBe(r.stdout);
      expect(r).toMatchObject({ stdoutBytes: 200, combinedBytes: 200, truncated: true });
      expect(r.omittedBytes).toEqual({ stdout: 100, stderr: 0, combined: 100 });
    });

    it("is not truncated at exactly the cap, and is at one byte more", async () => {
      const at = await node("process.stdout.write('a'.repeat(100))", { maxCaptureBytes: 100 });
      expect(at).toMatchObject({ truncated: false, stdout: "a".repeat(100), stdoutBytes: 100 });
      expect(at.omittedBytes).toEqual({ stdout: 0, stderr: 0, combined: 0 });
      const over = await node("process.stdout.write('a'.repeat(101))", { maxCaptureBytes: 100 });
      expect(over).toMatchObject({ truncated: true, stdoutBytes: 101 });
      expect(over.omittedBytes.stdout).toBe(1);
    });

    it("caps the combined stream on its own", async () => {
      const r = await node("process.stdout.write('o'.repeat(60)); process.stderr.write('e'.repeat(60))", {
        maxCaptureBytes: 100,
      });
      expect(r.stdout).toBe("o".repeat(60));
      expect(r.stderr).toBe("e".repeat(60));
      expect(r.truncated).toBe(true);
      expect(r.omittedBytes).toEqual({ stdout: 0, stderr: 0, combined: 20 });
      expect(r.combinedBytes).toBe(120);
    });

    it("writes the full, uncapped combined output to combinedFile (appending)", async () => {
      const file = join(dir, `combined-${transport}.log`);
      writeFileSync(file, "previous\n");
      const r = await node("process.stdout.write('x'.repeat(5000)); process.stderr.write('y'.repeat(3000))", {
        maxCaptureBytes: 10,
        combinedFile: file,
      });
      expect(r.truncated).toBe(true);
      const content = readFileSync(file, "utf8");
      expect(content).toBe("previous\n" + "x".repeat(5000) + "y".repeat(3000));
      expect(r.combinedFileError).toBeUndefined();
    });
  });

  describe("runProcess: bytes", () => {
    it("is safe on non-UTF-8 output and keeps the raw bytes in combinedFile", async () => {
      const file = join(dir, `binary-${transport}.log`);
      const r = await node("process.stdout.write(Buffer.from([0xff, 0xfe, 0x80, 0x41, 0x00, 0x42]))", {
        combinedFile: file,
      });
      expect(r.stdoutBytes).toBe(6);
      expect(r.stdout).toBe("\uFFFD\uFFFD\uFFFDA\u0000B");
      expect([...readFileSync(file)]).toEqual([0xff, 0xfe, 0x80, 0x41, 0x00, 0x42]);
    });

    it("decodes a character split across two writes", async () => {
      const r = await node(
        "process.stdout.write(Buffer.from([0xc3])); setTimeout(() => process.stdout.write(Buffer.from([0xa9])), 50)",
      );
      expect(r.stdout).toBe("é");
    });
  });

  describe("runProcess: onOutput", () => {
    it("streams chunks live, tagged with their stream", async () => {
      const seen: string[] = [];
      const ac = new AbortController();
      const r = await sh("echo ready; echo warn >&2; sleep 30", {
        signal: ac.signal,
        onOutput: (chunk, stream) => {
          seen.push(`${stream}:${chunk.toString()}`);
          if (seen.length === 2) ac.abort(); // only possible if chunks arrive before the exit
        },
      });
      expect(r.cancelled).toBe(true);
      expect(seen.sort()).toEqual(["stderr:warn\n", "stdout:ready\n"]);
    });

    it("rejects with what onOutput threw, after killing the process", async () => {
      const boom = new Error("callback bug");
      await expect(
        sh("echo hi; sleep 30", {
          onOutput: () => {
            throw boom;
          },
        }),
      ).rejects.toBe(boom);
    });
  });

  describe("runProcess: spawn errors are results", () => {
    it("reports a missing command as ENOENT", async () => {
      const r = await runProcess({ command: "ratchet-no-such-command-xyz", env });
      expect(r.spawnError?.code).toBe("ENOENT");
      expect(r.spawnError?.message).toContain("ratchet-no-such-command-xyz");
      expect(r).toMatchObject({ exitCode: null, signal: null, stdout: "", combinedBytes: 0 });
      expect(r.pid).toBeUndefined();
    });

    it("reports a missing executable path as ENOENT", async () => {
      const r = await runProcess({ command: join(dir, "nope.sh"), env });
      expect(r.spawnError).toMatchObject({ code: "ENOENT" });
      expect(r.spawnError?.message).toContain("nope.sh");
    });

    it("reports a file without the execute bit as EACCES", async () => {
      const file = join(dir, `not-executable-${transport}.sh`);
      writeFileSync(file, "#!/bin/sh\necho hi\n");
      chmodSync(file, 0o644);
      const r = await runProcess({ command: file, env });
      expect(r.spawnError?.code).toBe("EACCES");
    });

    it("names a missing cwd", async () => {
      const cwd = join(dir, "does-not-exist");
      const r = await runProcess({ command: "true", cwd, env });
      expect(r.spawnError).toEqual({ code: "ENOENT", message: `working directory does not exist: ${cwd}` });
    });

    it("names a cwd that is a file", async () => {
      const cwd = join(dir, `a-file-${transport}`);
      writeFileSync(cwd, "");
      const r = await runProcess({ command: "true", cwd, env });
      expect(r.spawnError?.code).toBe("ENOTDIR");
      expect(r.spawnError?.message).toContain(cwd);
    });

    it("reports an unopenable combinedFile without starting anything", async () => {
      const file = join(dir, "no-dir", "out.log");
      const r = await runProcess({ command: "true", combinedFile: file, env });
      expect(r.spawnError?.code).toBe("ENOENT");
      expect(r.spawnError?.message).toContain(file);
      expect(r.pid).toBeUndefined();
    });
  });

  describe("runProcess: programming errors reject", () => {
    const bad: [string, RunRequest][] = [
      ["command", { command: "" }],
      ["args[1]", { command: "echo", args: ["a", "b\0c"] }],
      ["timeoutMs", { command: "true", timeoutMs: 0 }],
      ["timeoutMs", { command: "true", timeoutMs: Number.NaN }],
      ["maxCaptureBytes", { command: "true", maxCaptureBytes: -1 }],
      ["killGraceMs", { command: "true", killGraceMs: -5 }],
      ["env", { command: "true", env: { "A=B": "c" } }],
    ];
    for (const [field, req] of bad) {
      it(`rejects a bad ${field}`, async () => {
        const err = await runProcess(req).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isRatchetError(err, "invalid_value")).toBe(true);
        expect((err as Error).message).toContain(field.replace(/\[.*$/, ""));
      });
    }
  });
});
