/**
 * The ProcessRunner contract, run against the real runner and the fake. Each case gives the real
 * command and the scripted reply that stands for it; the assertions are shared.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { truncationMarker } from "../core/index.js";
import { FakeProcessRunner } from "../testing/fake-process-runner.js";
import { buildEnv } from "./env.js";
import { realProcessRunner } from "./process-runner.js";
import { type Transport, useTransport } from "./spawner-kit.js";
import type { ProcessRunner, RunResult } from "./types.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-contract-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const env = buildEnv({ inherit: "minimal" });

const OUT_ERR_EXIT = ["-c", "printf out; sleep 0.05; printf err >&2; exit 3"];
const TEN_BYTES = ["-c", "printf 0123456789"];

function scriptedFake(): FakeProcessRunner {
  return new FakeProcessRunner()
    .on({ command: "sh", args: OUT_ERR_EXIT }, { stdout: "out", stderr: "err", exitCode: 3 })
    .on({ command: "sh", args: TEN_BYTES }, { stdout: "0123456789" })
    .on({ command: "sleep" }, { hang: true });
}

/** Fields every result has, with the right types and the invariants between them. */
function expectWellFormed(r: RunResult): void {
  expect(typeof r.stdout).toBe("string");
  expect(typeof r.stderr).toBe("string");
  expect(typeof r.combined).toBe("string");
  expect(r.combinedBytes).toBe(r.stdoutBytes + r.stderrBytes);
  expect(r.truncated).toBe(r.omittedBytes.stdout + r.omittedBytes.stderr + r.omittedBytes.combined > 0);
  expect(r.durationMs).toBeGreaterThanOrEqual(0);
  expect(typeof r.timedOut).toBe("boolean");
  expect(typeof r.cancelled).toBe("boolean");
  if (r.spawnError) {
    expect(r.exitCode).toBeNull();
    expect(r.pid).toBeUndefined();
  }
  if (r.signal !== null) expect(r.exitCode).toBeNull();
}

const runners: [string, () => ProcessRunner, Transport | undefined][] = [
  ["realProcessRunner over the spawner", () => realProcessRunner, "spawner"],
  ["realProcessRunner over child_process", () => realProcessRunner, "child_process"],
  ["FakeProcessRunner", scriptedFake, undefined],
];

describe.each(runners)("ProcessRunner contract: %s", (name, make, transport) => {
  let restore = (): void => {};
  beforeAll(async () => {
    if (transport) restore = await useTransport(transport);
  });
  afterAll(() => restore());

  it("captures stdout, stderr, combined and the exit code", async () => {
    const r = await make().run({ command: "sh", args: OUT_ERR_EXIT, env });
    expectWellFormed(r);
    expect(r).toMatchObject({
      exitCode: 3,
      signal: null,
      stdout: "out",
      stderr: "err",
      combined: "outerr",
      stdoutBytes: 3,
      stderrBytes: 3,
      combinedBytes: 6,
      truncated: false,
      timedOut: false,
      cancelled: false,
    });
    expect(typeof r.pid).toBe("number");
    expect(r.spawnError).toBeUndefined();
  });

  it("streams to onOutput and appends everything to combinedFile", async () => {
    const file = join(dir, `${name.replaceAll(" ", "-")}.log`);
    const chunks: string[] = [];
    const r = await make().run({
      command: "sh",
      args: OUT_ERR_EXIT,
      env,
      combinedFile: file,
      onOutput: (chunk, stream) => chunks.push(`${stream}:${chunk.toString()}`),
    });
    expectWellFormed(r);
    expect(chunks).toEqual(["stdout:out", "stderr:err"]);
    expect(readFileSync(file, "utf8")).toBe("outerr");
  });

  it("caps captures with head + marker + tail", async () => {
    const r = await make().run({ command: "sh", args: TEN_BYTES, env, maxCaptureBytes: 4 });
    expectWellFormed(r);
    expect(r.stdout).toBe(`01${truncationMarker(6)}89`);
    expect(r).toMatchObject({ truncated: true, stdoutBytes: 10, exitCode: 0 });
    expect(r.omittedBytes).toEqual({ stdout: 6, stderr: 0, combined: 6 });
  });

  it("reports a command that cannot start as spawnError ENOENT", async () => {
    const r = await make().run({ command: "ratchet-no-such-command-xyz", env });
    expectWellFormed(r);
    expect(r.spawnError?.code).toBe("ENOENT");
    expect(r).toMatchObject({ exitCode: null, signal: null, stdout: "", stderr: "", combined: "" });
  });

  it("times out", async () => {
    const r = await make().run({ command: "sleep", args: ["30"], env, timeoutMs: 100 });
    expectWellFormed(r);
    expect(r).toMatchObject({ timedOut: true, cancelled: false, exitCode: null });
  });

  it("is cancelled by an AbortSignal", async () => {
    const ac = new AbortController();
    const running = make().run({ command: "sleep", args: ["30"], env, signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    const r = await running;
    expectWellFormed(r);
    expect(r).toMatchObject({ cancelled: true, timedOut: false, exitCode: null });
  });

  it("starts nothing when already aborted", async () => {
    const ac = new AbortController();
    ac.abort();
    const r = await make().run({ command: "sleep", args: ["30"], env, signal: ac.signal });
    expectWellFormed(r);
    expect(r).toMatchObject({ cancelled: true, exitCode: null });
    expect(r.pid).toBeUndefined();
  });
});
