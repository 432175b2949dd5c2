// Command custom tools through the bridge: real processes (node scripts) run by exec's runner.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Redactor } from "../core/index.js";
import { createBridgeApp } from "./app.js";
import { createToolRegistry } from "./registry.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-custom-tools-"));
mkdirSync(join(dir, "tools"));
const script = (name: string, body: string) => writeFileSync(join(dir, "tools", name), body);

script(
  "upper.mjs",
  `let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => {
  const args = JSON.parse(s);
  process.stdout.write(JSON.stringify({ upper: args.text.toUpperCase(), cwd: process.cwd(), secret: process.env.SECRET_PARENT ?? null, own: process.env.OWN ?? null }));
});`,
);
script(
  "fail.mjs",
  `process.stderr.write("something broke: ${"x".repeat(10)} token=SECRETVALUE-123\\n"); process.exit(3);`,
);
script("text.mjs", `process.stdout.write("hello, not json"); process.stderr.write("a warning\\n");`);
script("silent.mjs", "");
script(
  "sleep.mjs",
  `import { writeFileSync } from "node:fs"; writeFileSync(process.argv[2], String(process.pid)); setTimeout(() => {}, 60000);`,
);
script(
  "marker.mjs",
  `import { writeFileSync } from "node:fs"; writeFileSync(process.argv[2], "ran"); process.stdout.write("{}");`,
);

const node = process.execPath;
const pidFile = join(dir, "sleep.pid");
const markerFile = join(dir, "marker.txt");
const TOKEN = "c".repeat(64);

const registry = createToolRegistry(
  {
    baseDir: dir,
    customTools: {
      upper: {
        command: node,
        args: ["tools/upper.mjs"],
        description: "Uppercases text.",
        input_schema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        env: { OWN: "mine" },
      },
      fail: { command: node, args: ["tools/fail.mjs"] },
      text: { command: node, args: ["tools/text.mjs"] },
      silent: { command: node, args: ["tools/silent.mjs"] },
      sleep: { command: node, args: ["tools/sleep.mjs", pidFile], timeout_ms: 300 },
      marker: {
        command: node,
        args: ["tools/marker.mjs", markerFile],
        input_schema: { type: "object", properties: { n: { type: "number" } }, additionalProperties: false },
      },
      missing: { command: "ratchet-no-such-command" },
    },
  },
  { env: { ...process.env, SECRET_PARENT: "parent-secret-value" } },
);
const app = createBridgeApp({
  registry,
  token: TOKEN,
  redactor: new Redactor().add("SECRET_TOOL", "SECRETVALUE-123"),
});

async function call(tool: string, body: unknown = {}) {
  const res = await app.request(`/tools/custom/${tool}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { success: boolean; result: unknown; error: string | null },
  };
}

afterAll(async () => {
  await registry.close();
  rmSync(dir, { recursive: true, force: true });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("command custom tools", () => {
  it("pass the arguments on stdin and answer the JSON on stdout, with a minimal env plus their own", async () => {
    expect(await call("upper", { text: "abc" })).toEqual({
      status: 200,
      body: { success: true, result: { upper: "ABC", cwd: dir, secret: null, own: "mine" }, error: null },
    });
  });

  it("answer 422 with the stderr tail (redacted) on a non-zero exit", async () => {
    expect(await call("fail")).toEqual({
      status: 422,
      body: {
        success: false,
        result: null,
        error:
          "custom tool fail exited with status 3; stderr: something broke: xxxxxxxxxx token=[REDACTED:SECRET_TOOL]",
      },
    });
  });

  it("answer 422 when stdout is not JSON, or empty", async () => {
    expect(await call("text")).toMatchObject({
      status: 422,
      body: {
        success: false,
        error:
          'custom tool text wrote non-JSON output "hello, not json" to stdout (expected one JSON value); stderr: a warning',
      },
    });
    expect((await call("silent")).body.error).toBe(
      "custom tool silent wrote nothing to stdout (expected one JSON value)",
    );
  });

  it("answer 504 when the tool's own timeout expires, and the process is killed", async () => {
    const r = await call("sleep");
    expect(r.status).toBe(504);
    expect(r.body).toMatchObject({ success: false, result: null });
    expect(r.body.error).toMatch(/timed out after 300 ms/);
    const pid = Number(readFileSync(pidFile, "utf8"));
    for (let i = 0; i < 200 && alive(pid); i++) await new Promise((res) => setTimeout(res, 25));
    expect(alive(pid)).toBe(false);
    expect((await call("upper", { text: "still serving" })).status).toBe(200);
  });

  it("answer 502 when the command cannot start", async () => {
    const r = await call("missing");
    expect(r.status).toBe(502);
    expect(r.body.error).toMatch(
      /^custom tool missing could not start: command not found: ratchet-no-such-command/,
    );
  });

  it("are not run when the arguments fail their schema", async () => {
    expect((await call("marker", { n: "one" })).status).toBe(400);
    expect(existsSync(markerFile)).toBe(false);
    expect((await call("marker", { n: 1 })).body).toEqual({ success: true, result: {}, error: null });
    expect(existsSync(markerFile)).toBe(true);
  });

  it("refuse a name already taken by a built-in", () => {
    expect(() => createToolRegistry({ customTools: { echo: { command: "true" } } })).toThrow(
      "custom tool echo is already registered (a built-in tool)",
    );
  });
});
