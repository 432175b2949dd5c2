/**
 * `ratchet step run` output handling through the built CLI: one-stage truncation (8 KiB head +
 * marker + 8 KiB tail) in the row with the full output kept as a content-addressed blob, the time
 * limit, and secret redaction everywhere the output lands on disk.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import {
  assertBuilt,
  type Marker,
  makeWorkspace,
  publish,
  query,
  type TestWorkspace,
} from "../helpers/cli.js";

// Generous bounds for a loaded 2-core machine (these spawn many processes); they are not timings.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const HEAD = 8 * 1024;
const TAIL = 8 * 1024;
const FOOTER = /--- exit_code=(\d+), runtime=\d+\.\d{2}s ---$/;

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await makeWorkspace("ratchet-e2e-run-");
});
afterAll(() => ws?.remove());

interface LogRow {
  text: string;
  bytes: number;
  truncated: number;
  blob: string | null;
}

/** Publishes a one-COMMAND-step plan and runs `command` in it. */
async function runOne(command: string, extra: Record<string, unknown> = {}, env?: Record<string, string>) {
  const p = await publish(ws, {
    goal: `run ${command.slice(0, 30)}`,
    steps: [{ title: "run", type: "COMMAND" }],
  });
  const stepId = p.step_ids[0] as string;
  const r = await ws.run(["step", "run", "-"], {
    input: JSON.stringify({ step_id: stepId, type: "COMMAND", command, ...extra }),
    ...(env ? { env } : {}),
  });
  const logs = query<LogRow>(
    ws,
    "SELECT text, bytes, truncated, blob FROM step_logs WHERE step_id = ? AND kind = 'run'",
    stepId,
  );
  expect(logs).toHaveLength(1);
  return { planId: p.plan_id, stepId, r, marker: r.marker as Marker, log: logs[0] as LogRow };
}

/** `seq 1 n` as text. */
function seqText(n: number): string {
  return `${Array.from({ length: n }, (_, i) => i + 1).join("\n")}\n`;
}

function blobPath(hash: string): string {
  return join(ws.blobsDir, hash.slice(0, 2), hash.slice(2));
}

describe("step run output", () => {
  test("output over 16 KiB is cut exactly once in the row; the blob keeps it all", async () => {
    const full = seqText(10_000);
    const total = Buffer.byteLength(full);
    expect(total).toBeGreaterThan(HEAD + TAIL);
    const { planId, stepId, r, marker, log } = await runOne("seq 1 10000");
    expect(r.status).toBe(0);
    expect(marker).toMatchObject({
      ok: true,
      op: "run-step",
      truncated: true,
      output_bytes: total,
      exit_code: 0,
    });

    // Row: head + one marker + tail + footer, nothing else.
    const omitted = total - HEAD - TAIL;
    const expected = `${full.slice(0, HEAD)}\n--- TRUNCATED ${omitted} BYTES ---\n${full.slice(total - TAIL)}`;
    expect(log.text.startsWith(expected)).toBe(true);
    expect(log.text.slice(expected.length)).toMatch(/^--- exit_code=0, runtime=\d+\.\d{2}s ---$/);
    expect(log.text.match(/TRUNCATED/g)).toHaveLength(1);
    expect(log.truncated).toBe(1);

    // Blob: the whole output plus the footer, named by its sha256.
    expect(log.blob).toMatch(/^[0-9a-f]{64}$/);
    const blob = readFileSync(blobPath(log.blob as string));
    expect(createHash("sha256").update(blob).digest("hex")).toBe(log.blob);
    const blobText = blob.toString("utf8");
    expect(blobText.startsWith(full)).toBe(true);
    expect(blobText.slice(full.length)).toMatch(FOOTER);
    expect(log.bytes).toBe(blob.length);

    // plan show --full --json serves the blob; without --full only the cut text.
    const shown = await ws.run(["plan", "show", planId, "--full", "--json"]);
    expect(shown.status).toBe(0);
    const view = JSON.parse(shown.stdout) as {
      steps: { step_id: string; logs: { kind: string; text: string; full?: string }[] }[];
    };
    const runLog = view.steps.find((s) => s.step_id === stepId)?.logs.find((l) => l.kind === "run");
    expect(runLog?.full).toBe(blobText);
    expect(runLog?.text).toBe(log.text);
    const cutOnly = JSON.parse((await ws.run(["plan", "show", planId, "--json"])).stdout) as typeof view;
    expect(
      cutOnly.steps.find((s) => s.step_id === stepId)?.logs.find((l) => l.kind === "run")?.full,
    ).toBeUndefined();
    // The text view of --full prints the whole output.
    const text = await ws.run(["plan", "show", planId, "--full"]);
    expect(text.stdout).toContain("│ 5000\n");
    expect(text.stdout).not.toContain("TRUNCATED");
  });

  test("exactly 16 KiB is not cut; one byte more is (TRUNCATED 1 BYTES)", async () => {
    const at = await runOne(`head -c ${HEAD + TAIL} /dev/zero | tr '\\0' x`);
    expect(at.marker).toMatchObject({ truncated: false, output_bytes: HEAD + TAIL });
    expect(at.log).toMatchObject({ truncated: 0, blob: null });
    expect(at.log.text).toBe(`${"x".repeat(HEAD + TAIL)}\n${at.log.text.split("\n")[1]}`);
    expect(at.log.text).toMatch(FOOTER);

    const over = await runOne(`head -c ${HEAD + TAIL + 1} /dev/zero | tr '\\0' y`);
    expect(over.marker).toMatchObject({ truncated: true, output_bytes: HEAD + TAIL + 1 });
    expect(over.log.truncated).toBe(1);
    expect(over.log.text).toMatch(
      new RegExp(`^y{${HEAD}}\\n--- TRUNCATED 1 BYTES ---\\ny{${TAIL}}\\n--- exit_code=0, runtime=`),
    );
    expect(readFileSync(blobPath(over.log.blob as string), "utf8")).toMatch(
      new RegExp(`^y{${HEAD + TAIL + 1}}\\n--- exit_code=0`),
    );
  });

  test("short output is stored whole: truncated:false, no blob", async () => {
    const { r, marker, log } = await runOne("printf 'one\\ntwo\\n'; exit 2");
    expect(r.status).toBe(2);
    expect(marker).toMatchObject({
      ok: true,
      op: "run-step",
      truncated: false,
      output_bytes: 8,
      exit_code: 2,
    });
    expect(log.text).toMatch(/^one\ntwo\n--- exit_code=2, runtime=\d+\.\d{2}s ---$/);
    expect(log).toMatchObject({ truncated: 0, blob: null });
  });

  test("timeout_seconds: 1 on `sleep 10` → exit 124 and FAILED", async () => {
    const started = Date.now();
    const { r, marker, log, stepId, planId } = await runOne("sleep 10", { timeout_seconds: 1 });
    expect(Date.now() - started).toBeLessThan(9_000); // it did not wait for the sleep (a bound, not a timing)
    expect(r.status).toBe(124);
    expect(marker).toMatchObject({
      ok: true,
      op: "run-step",
      exit_code: 124,
      timed_out: true,
      status: "FAILED",
      reason: "command timed out after 1s",
    });
    expect(log.text).toMatch(/^\[run-step\] killed after the 1s time limit\n/);
    expect(log.text).toMatch(/--- exit_code=124, runtime=/);
    expect(
      query(ws, "SELECT status, exit_code, failure_reason FROM steps WHERE step_id = ?", stepId),
    ).toEqual([{ status: "FAILED", exit_code: 124, failure_reason: "command timed out after 1s" }]);
    expect(query(ws, "SELECT status FROM plans WHERE plan_id = ?", planId)).toEqual([{ status: "FAILED" }]);
  });

  test("a secret from the environment is redacted everywhere: rows, blobs, WAL — even across the cuts", async () => {
    const secret = "s3cr3t-value-123";
    // The secret at the start, straddling the head cut, in the cut-out middle, straddling the tail
    // cut, at the very end; plus the literal value in the command and the summary.
    const straddleHead = HEAD - 10;
    const command = [
      `echo "token=$SECRET_TOKEN"`,
      `head -c ${straddleHead - 23} /dev/zero | tr '\\0' a`,
      `printf '%s' "$SECRET_TOKEN"`,
      `head -c 20000 /dev/zero | tr '\\0' b`,
      `echo "$SECRET_TOKEN"`,
      `head -c 20000 /dev/zero | tr '\\0' c`,
      `printf '%s' "$SECRET_TOKEN"`,
      `head -c ${TAIL - 25} /dev/zero | tr '\\0' d`,
      `echo ${secret}`,
    ].join("; ");
    const { r, marker, log, stepId } = await runOne(
      command,
      { summary: `used ${secret}` },
      { SECRET_TOKEN: secret },
    );
    expect(r.status).toBe(0);
    expect(marker).toMatchObject({ truncated: true });
    expect(log.text).toContain("token=[REDACTED:SECRET_TOKEN]");
    expect(log.text).toMatch(/\[REDACTED:SECRET_TOKEN\]\n--- exit_code=0, runtime=\d+\.\d{2}s ---$/);
    const full = readFileSync(blobPath(log.blob as string), "utf8");
    expect(full.match(/\[REDACTED:SECRET_TOKEN\]/g)).toHaveLength(5);
    expect(query(ws, "SELECT summary FROM steps WHERE step_id = ?", stepId)).toEqual([
      { summary: "used [REDACTED:SECRET_TOKEN]" },
    ]);

    // Grep the bytes of every file of the workspace store: db, WAL, shm, blobs.
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir)) {
        const p = join(dir, e);
        if (statSync(p).isDirectory()) walk(p);
        else files.push(p);
      }
    };
    walk(ws.ratchetDir);
    expect(files.some((f) => f.endsWith("ratchet.db"))).toBe(true);
    expect(files.some((f) => f.includes("/blobs/"))).toBe(true);
    // No piece of 6+ characters of the secret either (a cut must not leave half a secret behind).
    const pieces = Array.from({ length: secret.length - 5 }, (_, i) => secret.slice(i, i + 6));
    for (const f of files) {
      const bytes = readFileSync(f);
      expect(bytes.includes(secret), `${f} holds the secret`).toBe(false);
      for (const piece of pieces) expect(bytes.includes(piece), `${f} holds "${piece}"`).toBe(false);
    }
  });
});
