import { mkdirSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanStaleRunDirs, redactingLineSink } from "./run-step.js";

describe("redactingLineSink", () => {
  it("masks a secret split across chunks and passes whole lines", () => {
    const shown: string[] = [];
    const sink = redactingLineSink(
      (t) => t.replaceAll("s3cr3t-value", "[REDACTED]"),
      (t) => shown.push(t),
    );
    sink.write("token: s3cr");
    sink.write("3t-value\nnext ");
    sink.write(Buffer.from("line s3cr3t-value"));
    sink.flush();
    expect(shown.join("")).toBe("token: [REDACTED]\nnext line [REDACTED]");
    expect(shown.join("")).not.toContain("s3cr3t");
  });
});

describe("cleanStaleRunDirs", () => {
  it("removes folders of dead step-run processes and keeps live ones", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ratchet-clean-"));
    mkdirSync(join(dir, `ratchet-run-${process.pid}-abc`));
    mkdirSync(join(dir, "ratchet-run-999999999-def"));
    mkdirSync(join(dir, "blobs"));
    expect(await cleanStaleRunDirs(dir)).toEqual(["ratchet-run-999999999-def"]);
    expect(readdirSync(dir).sort()).toEqual(["blobs", `ratchet-run-${process.pid}-abc`]);
    expect(await cleanStaleRunDirs(join(dir, "missing"))).toEqual([]);
  });
});
