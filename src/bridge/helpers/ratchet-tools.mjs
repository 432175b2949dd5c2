// Call Ratchet's tool bridge from a script. No dependencies (Node's global fetch).
//
//   import { callMcp, callCustom, apiSpec, ToolError } from "./ratchet-tools.mjs";
//
//   const total = await callMcp("calc", "add", { a: 2, b: 3 });
//   const echoed = await callCustom("echo", { text: "hi" });
//   console.log(await apiSpec(["calc/add", "echo"]));
//
// The bridge's address and token come from MCP_API_URL and MCP_API_TOKEN, which Ratchet sets for
// every run. A reply with "success": false throws ToolError carrying the bridge's error text and the
// HTTP status. Only failures to connect (refused, reset, connect timeout) are retried, with
// exponential backoff, at most MAX_ATTEMPTS times in all.

/** Most attempts of one call when the bridge cannot be reached (the first try included). */
export const MAX_ATTEMPTS = 5;
/** Wait before the second attempt, in milliseconds; doubled before each further one. */
export const BACKOFF_BASE_MS = 200;
/** Longest wait between two attempts, in milliseconds. */
export const BACKOFF_MAX_MS = 5000;

const RETRYABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** A tool call failed: the bridge answered `success: false`, or could not be reached. */
export class ToolError extends Error {
  /**
   * @param {string} message the bridge's error text
   * @param {number | undefined} status the HTTP status (undefined when the bridge was not reached)
   */
  constructor(message, status) {
    super(message);
    this.name = "ToolError";
    this.status = status;
  }
}

function env(name) {
  const value = process.env[name];
  if (!value) throw new ToolError(`${name} is not set: run this script through Ratchet (or export ${name})`);
  return value;
}

/** The errno-like code of a fetch failure (undici puts it on `cause`). */
function codeOf(err) {
  let e = err;
  for (let i = 0; i < 5 && e; i++) {
    if (typeof e.code === "string") return e.code;
    e = e.cause;
  }
  return undefined;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function post(path, payload) {
  const base = env("MCP_API_URL").replace(/\/+$/, "");
  const token = env("MCP_API_TOKEN");
  const body = JSON.stringify(payload);
  for (let attempt = 1; ; attempt++) {
    let response;
    try {
      response = await fetch(base + path, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
        body,
      });
    } catch (err) {
      const code = codeOf(err);
      if (code !== undefined && RETRYABLE.has(code) && attempt < MAX_ATTEMPTS) {
        await sleep(Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1)));
        continue;
      }
      throw new ToolError(
        `cannot reach the tool bridge at ${base} after ${attempt} attempt(s): ${code ?? err?.message ?? err}`,
      );
    }
    const text = await response.text();
    let reply;
    try {
      reply = JSON.parse(text);
    } catch {
      throw new ToolError(
        `the tool bridge answered HTTP ${response.status} with a non-JSON body: ${JSON.stringify(text.slice(0, 200))}`,
        response.status,
      );
    }
    if (reply === null || typeof reply !== "object" || !("success" in reply))
      throw new ToolError(
        `the tool bridge answered HTTP ${response.status} without a success field`,
        response.status,
      );
    if (!reply.success)
      throw new ToolError(reply.error || `the tool call failed (HTTP ${response.status})`, response.status);
    return reply.result;
  }
}

const segment = (name) => encodeURIComponent(String(name));

/** Calls `tool` of MCP server `server` with the arguments object `args`; resolves to its result. */
export function callMcp(server, tool, args = {}) {
  return post(`/tools/mcp/${segment(server)}/${segment(tool)}`, args);
}

/** Calls the custom tool `tool` with the arguments object `args`; resolves to its result. */
export function callCustom(tool, args = {}) {
  return post(`/tools/custom/${segment(tool)}`, args);
}

/** The text spec of one tool name or a list of names (`server/tool`, `mcp:server/tool`, `custom_tool`). */
export function apiSpec(names) {
  return post("/tools/virtual/get_api_spec", { tool_name: names });
}
