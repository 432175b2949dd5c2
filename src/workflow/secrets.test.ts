import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isRatchetError, type RatchetError } from "../core/errors.js";
import { parseWorkflow } from "./schema.js";
import { parseSecretsFile, resolveSecrets, resolveVariables } from "./secrets.js";

const root = mkdtempSync(join(tmpdir(), "ratchet-secrets-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const wf = parseWorkflow(
  {
    id: "wf",
    variables: { region: { default: "eu" }, limit: {}, week: { default: "1" } },
    secrets: ["api_token", "SECRET_DB_PASSWORD"],
    groups: { us: { REGION: "us", LIMIT: 50 }, empty: {} },
    steps: [{ id: "a", description: "A" }],
  },
  join(root, "flow.yaml"),
);

function expectError(fn: () => unknown, code: string, ...parts: string[]): RatchetError {
  try {
    fn();
  } catch (e) {
    expect(isRatchetError(e), String(e)).toBe(true);
    const err = e as RatchetError;
    expect(err.code, err.message).toBe(code);
    for (const p of parts) expect(err.message).toContain(p);
    return err;
  }
  return expect.unreachable("no error thrown");
}

describe("resolveVariables", () => {
  it("precedence: --var > group > env VAR_X > default", () => {
    expect(resolveVariables(wf, { cli: { LIMIT: "1" }, env: {} })).toEqual({
      VAR_REGION: "eu",
      VAR_LIMIT: "1",
      VAR_WEEK: "1",
    });
    expect(resolveVariables(wf, { cli: {}, group: "us", env: { VAR_REGION: "env", VAR_WEEK: "9" } })).toEqual(
      {
        VAR_REGION: "us",
        VAR_LIMIT: "50",
        VAR_WEEK: "9",
      },
    );
    expect(
      resolveVariables(wf, { cli: { var_region: "cli" }, group: "us", env: { VAR_REGION: "env" } })
        .VAR_REGION,
    ).toBe("cli");
    expect(resolveVariables(wf, { cli: {}, group: "empty", env: { VAR_LIMIT: "7" } }).VAR_LIMIT).toBe("7");
  });

  it("a required variable without a value is invalid_value naming it", () => {
    const err = expectError(() => resolveVariables(wf, { cli: {}, env: {} }), "invalid_value", "VAR_LIMIT");
    expect(err.details.variables).toEqual(["VAR_LIMIT"]);
  });

  it("an undeclared --var is a schema_violation naming it", () => {
    expectError(
      () => resolveVariables(wf, { cli: { colour: "red" }, env: {} }),
      "schema_violation",
      "colour",
      "COLOUR",
    );
  });

  it("an unknown group is not_found naming it", () => {
    expectError(
      () => resolveVariables(wf, { cli: { LIMIT: "1" }, group: "mars", env: {} }),
      "not_found",
      "mars",
    );
    expectError(() => resolveVariables(wf, { cli: { LIMIT: "1" }, group: "toString", env: {} }), "not_found");
  });
});

describe("parseSecretsFile", () => {
  it("reads NAME=value and SECRET_NAME=value lines, skipping comments", () => {
    const m = parseSecretsFile(
      "# comment\n\nAPI_TOKEN=abc=def\nSECRET_DB_PASSWORD = 'quoted value'\nexport other=\"x\"\r\n",
      "s",
    );
    expect([...m]).toEqual([
      ["API_TOKEN", "abc=def"],
      ["DB_PASSWORD", "quoted value"],
      ["OTHER", "x"],
    ]);
  });

  it("names the file and line of a bad line without showing it", () => {
    const err = expectError(
      () => parseSecretsFile("A=1\nhunter2\n", "/ws/.ratchet/secrets"),
      "malformed_input",
      "/ws/.ratchet/secrets:2",
    );
    expect(err.message).not.toContain("hunter2");
  });
});

describe("resolveSecrets", () => {
  let n = 0;
  function secretsFile(text: string, mode: number): string {
    const p = join(root, `secrets-${++n}`);
    writeFileSync(p, text);
    chmodSync(p, mode);
    return p;
  }

  it("env SECRET_X first, else the secrets file", () => {
    const file = secretsFile("API_TOKEN=from-file\nDB_PASSWORD=pw\n", 0o600);
    expect(resolveSecrets(wf, { env: { SECRET_API_TOKEN: "from-env" }, secretsFile: file })).toEqual({
      SECRET_API_TOKEN: "from-env",
      SECRET_DB_PASSWORD: "pw",
    });
  });

  it("does not read the file when the environment has every secret", () => {
    const file = secretsFile("garbage line\n", 0o644);
    expect(
      resolveSecrets(wf, { env: { SECRET_API_TOKEN: "a", SECRET_DB_PASSWORD: "b" }, secretsFile: file }),
    ).toEqual({
      SECRET_API_TOKEN: "a",
      SECRET_DB_PASSWORD: "b",
    });
  });

  it("refuses a file readable by group or others, naming the file and its mode", () => {
    const file = secretsFile("API_TOKEN=x\nDB_PASSWORD=y\n", 0o644);
    const err = expectError(
      () => resolveSecrets(wf, { env: {}, secretsFile: file }),
      "invalid_value",
      file,
      "0644",
      "0600",
    );
    expect(err.details.mode).toBe("0644");
    expectError(
      () => resolveSecrets(wf, { env: {}, secretsFile: secretsFile("", 0o640) }),
      "invalid_value",
      "0640",
    );
  });

  it("a declared secret without a value is invalid_value naming it", () => {
    const file = secretsFile("API_TOKEN=x\n", 0o600);
    expectError(
      () => resolveSecrets(wf, { env: {}, secretsFile: file }),
      "invalid_value",
      "SECRET_DB_PASSWORD",
      file,
    );
    expectError(
      () => resolveSecrets(wf, { env: { SECRET_API_TOKEN: "" } }),
      "invalid_value",
      "SECRET_API_TOKEN",
      "SECRET_DB_PASSWORD",
    );
    // A missing file is no value, not an error of its own.
    expectError(
      () => resolveSecrets(wf, { env: {}, secretsFile: join(root, "nope") }),
      "invalid_value",
      "SECRET_API_TOKEN",
    );
  });

  it("a workflow without secrets needs nothing", () => {
    expect(resolveSecrets({ ...wf, secrets: [] }, { env: {} })).toEqual({});
  });
});
