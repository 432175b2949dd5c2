import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { MAX_OUTPUT_FILE_BYTES } from "./limits.js";
import type { ValidationSchema } from "./types.js";
import { validateOutputs } from "./validation.js";

const root = mkdtempSync(join(tmpdir(), "ratchet-validation-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A fresh output folder with the given files (string content, or JSON for objects). */
function outputs(files: Record<string, unknown> = {}): string {
  const dir = join(root, `out-${++n}`);
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), typeof content === "string" ? content : JSON.stringify(content));
  }
  return dir;
}

const checks = (dir: string, schema?: ValidationSchema, declaredOutputs?: string[]) =>
  validateOutputs(dir, schema, declaredOutputs ? { declaredOutputs } : {}).issues.map((i) => i.check);

describe("validateOutputs: files and JSON checks", () => {
  const schema: ValidationSchema = {
    files: [
      {
        file_name: "report.json",
        must_exist: true,
        json_checks: [
          { path: "$.rows", value_type: "array", min_length: 1 },
          { path: "$.count", consistency_check: { type: "equals", compare_with_path: "$.expected" } },
        ],
      },
    ],
  };

  it("passes valid outputs", () => {
    const dir = outputs({ "report.json": { rows: [1], count: 1, expected: 1 } });
    expect(validateOutputs(dir, schema)).toEqual({ ok: true, issues: [] });
  });

  it("reports failed checks naming file, path and check", () => {
    const dir = outputs({ "report.json": { rows: [], count: 2, expected: 1 } });
    const r = validateOutputs(dir, schema);
    expect(r.ok).toBe(false);
    expect(r.issues).toEqual([
      {
        file: "report.json",
        path: "$.rows",
        check: "min_length",
        message: "length 0 is below the minimum 1",
      },
      {
        file: "report.json",
        path: "$.count",
        check: "consistency_check",
        message: "equals: 2 is not equal to $.expected (1)",
      },
    ]);
  });

  it("must_exist, then the built-in non-empty check", () => {
    expect(checks(outputs(), schema)).toEqual(["must_exist"]);
    expect(
      checks(outputs({ "report.json": "" }), { files: [{ file_name: "report.json", must_exist: true }] }),
    ).toEqual(["builtin_non_empty"]);
    expect(
      checks(outputs({ "report.json": "" }), {
        files: [{ file_name: "report.json", must_exist: true }],
        skip_builtin_checks: true,
      }),
    ).toEqual([]);
    // An optional file that is absent is not checked.
    expect(
      checks(outputs({ "x.txt": "x" }), {
        files: [{ file_name: "report.json", json_checks: [{ path: "$.a", must_exist: true }] }],
      }),
    ).toEqual([]);
  });

  it("a file that is not JSON fails json_parse", () => {
    const r = validateOutputs(outputs({ "report.json": "{oops" }), schema);
    expect(r.issues[0]).toMatchObject({ file: "report.json", check: "json_parse" });
    expect(r.issues[0]?.message).toContain("report.json is not valid JSON");
  });

  it("a file larger than the limit fails the size check", () => {
    const dir = outputs({ "report.json": "" });
    truncateSync(join(dir, "report.json"), MAX_OUTPUT_FILE_BYTES + 1);
    expect(checks(dir, schema)).toEqual(["size"]);
  });

  it("refuses file names outside the output folder", () => {
    expect(
      checks(outputs({ "a.txt": "x" }), { files: [{ file_name: "../secret.json", must_exist: true }] }),
    ).toEqual(["file_name"]);
    expect(
      checks(outputs({ "a.txt": "x" }), { files: [{ file_name: "/etc/hostname", must_exist: true }] }),
    ).toEqual(["file_name"]);
    writeFileSync(join(root, "outside.json"), JSON.stringify({ a: 1 }));
    const dir = outputs();
    symlinkSync(join(root, "outside.json"), join(dir, "link.json"));
    const r = validateOutputs(dir, { files: [{ file_name: "link.json", must_exist: true }] });
    expect(r.issues.map((i) => i.check)).toEqual(["file_name"]);
    expect(r.issues[0]?.message).toContain("outside the output folder");
  });

  it("reads files in sub-folders", () => {
    const dir = outputs({ "data/out.json": { a: 1 } });
    expect(
      checks(dir, {
        files: [{ file_name: "data/out.json", json_checks: [{ path: "$.a", value_type: "string" }] }],
      }),
    ).toEqual(["value_type"]);
  });
});

describe("validateOutputs: built-in checks", () => {
  it("without a schema the folder needs a file besides code/", () => {
    expect(checks(outputs())).toEqual(["builtin_has_output"]);
    expect(checks(outputs({ "code/main.py": "print(1)" }))).toEqual(["builtin_has_output"]);
    expect(checks(outputs({ "code/main.py": "print(1)", "out.txt": "x" }))).toEqual([]);
    expect(checks(outputs({ "deep/er/out.txt": "x" }))).toEqual([]);
    expect(checks(outputs(), {})).toEqual(["builtin_has_output"]);
    expect(checks(outputs(), { skip_builtin_checks: true })).toEqual([]);
    expect(checks(join(root, "never-created"))).toEqual(["builtin_has_output"]);
  });

  it("declared outputs exist and are non-empty", () => {
    expect(checks(outputs({ "a.csv": "x" }), undefined, ["a.csv"])).toEqual([]);
    expect(checks(outputs({ "a.csv": "" }), undefined, ["a.csv"])).toEqual(["builtin_non_empty"]);
    expect(checks(outputs({ "b.csv": "x" }), undefined, ["a.csv"])).toEqual(["builtin_exists"]);
    expect(checks(outputs({ "b.csv": "x" }), { skip_builtin_checks: true }, ["a.csv"])).toEqual([]);
  });

  it("no top-level JSON object output has an error key", () => {
    const dir = outputs({
      "result.json": { error: "rate limited" },
      "sub/x.json": { error: "not top level" },
    });
    const r = validateOutputs(dir, undefined);
    expect(r.issues).toEqual([
      {
        file: "result.json",
        path: "$.error",
        check: "builtin_no_error_key",
        message: 'the output has a top-level "error": "rate limited"',
      },
    ]);
    expect(checks(outputs({ "result.json": { error: null, data: 1 } }))).toEqual([]);
    expect(checks(outputs({ "result.json": "not json" }))).toEqual([]);
    expect(checks(dir, { skip_builtin_checks: true })).toEqual([]);
    // A file with json_checks is parsed once and also gets the built-in check.
    expect(
      checks(outputs({ "r.json": { error: "x", a: 1 } }), {
        files: [{ file_name: "r.json", json_checks: [{ path: "$.a" }] }],
      }),
    ).toEqual(["builtin_no_error_key"]);
  });
});

describe("validateOutputs: db_checks", () => {
  function dbOutputs(rows: number): string {
    const dir = outputs();
    const db = new Database(join(dir, "data.db"));
    db.exec("CREATE TABLE t (id INTEGER)");
    const ins = db.prepare("INSERT INTO t VALUES (?)");
    for (let i = 0; i < rows; i++) ins.run(i);
    db.close();
    return dir;
  }
  const db = (query: string, bounds: { min_rows?: number; max_rows?: number } = {}): ValidationSchema => ({
    db_checks: [{ file_name: "data.db", query, ...bounds }],
  });

  it("checks row bounds", () => {
    const dir = dbOutputs(3);
    expect(checks(dir, db("SELECT * FROM t", { min_rows: 1, max_rows: 3 }))).toEqual([]);
    expect(checks(dir, db("SELECT * FROM t", { min_rows: 4 }))).toEqual(["min_rows"]);
    expect(checks(dir, db("SELECT * FROM t", { max_rows: 2 }))).toEqual(["max_rows"]);
    expect(
      checks(
        dir,
        db("WITH x AS (SELECT id FROM t WHERE id > 0) SELECT * FROM x", { min_rows: 2, max_rows: 2 }),
      ),
    ).toEqual([]);
    // An endless recursive query stops once the answer is known.
    expect(
      checks(
        dir,
        db("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c", {
          max_rows: 5,
        }),
      ),
    ).toEqual(["max_rows"]);
  });

  it("refuses anything but a read and never writes", () => {
    const dir = dbOutputs(2);
    expect(validateOutputs(dir, db("DELETE FROM t")).issues[0]?.message).toContain(
      "only a single SELECT or WITH",
    );
    expect(validateOutputs(dir, db("SELECT 1; DELETE FROM t")).issues[0]?.check).toBe("db_check");
    expect(validateOutputs(dir, db("WITH x AS (SELECT 1) DELETE FROM t")).issues[0]?.message).toMatch(
      /refused|readonly/i,
    );
    const check = new Database(join(dir, "data.db"), { readonly: true });
    expect(check.prepare("SELECT count(*) AS n FROM t").get()).toEqual({ n: 2 });
    check.close();
  });

  it("reports a missing file, bad SQL and a file outside the folder", () => {
    const dir = dbOutputs(1);
    expect(validateOutputs(outputs({ "x.txt": "x" }), db("SELECT 1")).issues[0]?.message).toBe(
      "data.db does not exist",
    );
    expect(validateOutputs(dir, db("SELECT * FROM nope")).issues[0]?.message).toContain("no such table");
    expect(checks(dir, { db_checks: [{ file_name: "../data.db", query: "SELECT 1" }] })).toEqual([
      "file_name",
    ]);
  });
});
