/**
 * `ratchet mcp` over stdio with the same argument check as `/mcp`: every line the client sends is
 * looked at as raw JSON (for `__proto__`/`constructor`/`prototype` keys in `tools/call` arguments)
 * before it is passed on, unchanged, to the SDK's stdio transport.
 */
import { PassThrough, type Readable } from "node:stream";
import type { RatchetError } from "../core/index.js";
import { argumentRefusals } from "./mcp-tools.js";

/**
 * A copy of `input` for `StdioServerTransport` that fills `refusals` (by JSON-RPC id) from each
 * line before the transport can read it. Lines that are not JSON pass unchanged (the transport
 * answers them).
 */
export function strictStdin(input: Readable, refusals: Map<string | number, RatchetError>): Readable {
  const out = new PassThrough();
  let pending = Buffer.alloc(0);
  input.on("data", (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    let nl = pending.indexOf(10);
    while (nl !== -1) {
      const line = pending.subarray(0, nl + 1);
      pending = pending.subarray(nl + 1);
      try {
        for (const [id, err] of argumentRefusals(JSON.parse(line.toString("utf8")))) refusals.set(id, err);
      } catch {
        // not JSON: the transport reports it
      }
      out.write(line);
      nl = pending.indexOf(10);
    }
  });
  input.on("end", () => {
    if (pending.length > 0) out.write(pending);
    out.end();
  });
  input.on("error", (e) => out.destroy(e));
  return out;
}
