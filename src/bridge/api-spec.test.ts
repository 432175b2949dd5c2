import { afterAll, describe, expect, it } from "vitest";
import { apiSpec, formatApiSpec, formatType, parseSpecNames } from "./api-spec.js";
import { BridgeError } from "./errors.js";
import { createToolRegistry } from "./registry.js";
import type { ToolDescription } from "./tools.js";

const add: ToolDescription = {
  ref: { kind: "mcp", server: "calc", tool: "add" },
  name: "mcp:calc/add",
  description: "Adds two numbers.",
  inputSchema: {
    type: "object",
    properties: {
      a: { type: "number", description: "first addend" },
      b: { type: "number" },
      round: { type: "boolean", default: false },
    },
    required: ["a", "b"],
  },
};

const search: ToolDescription = {
  ref: { kind: "custom", tool: "search" },
  name: "custom:search",
  description: "Searches\n  the index.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string" },
      mode: { type: "string", enum: ["fast", "exact"] },
      filters: {
        type: "array",
        items: {
          type: "object",
          properties: { field: { type: "string" }, values: { type: "array", items: { type: "integer" } } },
          required: ["field"],
        },
      },
      limit: { type: ["integer", "null"] },
    },
    required: ["query"],
    additionalProperties: false,
  },
};

const none: ToolDescription = {
  ref: { kind: "custom", tool: "ping" },
  name: "custom:ping",
  description: "",
  inputSchema: { type: "object", properties: {} },
};

describe("formatApiSpec", () => {
  it("prints the base URL, the auth line, then route, description and one line per parameter", () => {
    expect(formatApiSpec("http://127.0.0.1:4000", [add, search, none])).toBe(
      [
        "Base URL: http://127.0.0.1:4000",
        "Auth: Authorization: Bearer $MCP_API_TOKEN",
        'Reply: JSON {"success": true|false, "result": <the tool\'s result>, "error": <text>|null}',
        "",
        "POST http://127.0.0.1:4000/tools/mcp/calc/add",
        "Tool: mcp:calc/add",
        "Adds two numbers.",
        "Parameters:",
        "  a: number (required) - first addend",
        "  b: number (required)",
        "  round: boolean (default false)",
        "",
        "POST http://127.0.0.1:4000/tools/custom/search",
        "Tool: custom:search",
        "Searches\n  the index.",
        "Parameters:",
        "  query: string (required)",
        '  mode: "fast" | "exact"',
        "  filters: array<{field: string, values?: array<integer>}>",
        "  limit: integer | null",
        "",
        "POST http://127.0.0.1:4000/tools/custom/ping",
        "Tool: custom:ping",
        "(no description)",
        "Parameters: none",
        "",
      ].join("\n"),
    );
  });

  it("shows deep nesting compactly and never fails on odd schemas", () => {
    expect(formatType({ type: "object" })).toBe("object");
    expect(formatType({ type: "array" })).toBe("array");
    expect(formatType({})).toBe("any");
    expect(formatType({ const: "x" })).toBe('"x"');
    expect(formatType({ oneOf: [{ type: "string" }, { type: "number" }] })).toBe("string | number");
    const deep = {
      type: "array",
      items: {
        type: "array",
        items: {
          type: "array",
          items: { type: "array", items: { type: "array", items: { type: "string" } } },
        },
      },
    };
    expect(formatType(deep)).toBe("array<array<array<array<array>>>>");
  });
});

describe("parseSpecNames", () => {
  it("accepts a name, a list, a JSON-encoded list and a comma-separated string", () => {
    expect(parseSpecNames({ tool_name: "calc/add" })).toEqual(["calc/add"]);
    expect(parseSpecNames({ tool_name: ["calc/add", "echo"] })).toEqual(["calc/add", "echo"]);
    expect(parseSpecNames({ tool_name: '["calc/add","echo"]' })).toEqual(["calc/add", "echo"]);
    expect(parseSpecNames({ tool_name: "calc/add, echo, echo" })).toEqual(["calc/add", "echo"]);
  });

  it("names tool_name when it is missing or malformed", () => {
    for (const body of [
      {},
      { tool_name: 3 },
      { tool_name: "[bad" },
      { tool_name: [] },
      { tool_name: ["a", 1] },
      [],
    ]) {
      const e = (() => {
        try {
          parseSpecNames(body);
        } catch (err) {
          return err;
        }
        return undefined;
      })();
      expect(e, JSON.stringify(body)).toBeInstanceOf(BridgeError);
      expect((e as BridgeError).kind).toBe("bad_request");
      expect((e as BridgeError).message).toMatch(/tool_name/);
    }
  });
});

describe("apiSpec against a registry", () => {
  const registry = createToolRegistry({ customTools: {} });
  afterAll(() => registry.close());

  it("describes custom tools and checks the allowlist before anything else", async () => {
    const text = await apiSpec(registry, ["echo"], { baseUrl: "http://x" });
    expect(text).toContain(
      "POST http://x/tools/custom/echo\nTool: custom:echo\nReturns its arguments unchanged.\nParameters: any (a JSON object)",
    );
    await expect(
      apiSpec(registry, ["echo"], { baseUrl: "http://x", allowedTools: ["mcp:fx/*"] }),
    ).rejects.toMatchObject({
      kind: "forbidden",
      message: "tool custom:echo is not allowed in this run",
    });
    // A forbidden name is refused even when it does not exist: nothing about it is revealed.
    await expect(
      apiSpec(registry, ["nope/x"], { baseUrl: "http://x", allowedTools: ["echo"] }),
    ).rejects.toMatchObject({
      kind: "forbidden",
    });
    await expect(apiSpec(registry, ["nope/x"], { baseUrl: "http://x" })).rejects.toMatchObject({
      kind: "not_found",
      message: 'unknown MCP server "nope" (configured: none)',
    });
    await expect(apiSpec(registry, ["missing"], { baseUrl: "http://x" })).rejects.toMatchObject({
      kind: "not_found",
      message: 'unknown custom tool "missing" (custom tools: echo)',
    });
  });
});
