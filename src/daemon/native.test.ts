import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SERVED_COMMANDS } from "./protocol.js";

const source = readFileSync(join(import.meta.dirname, "..", "..", "native", "client.c"), "utf8");

describe("native/client.c", () => {
  it("serves exactly SERVED_COMMANDS", () => {
    const block = /BEGIN SERVED_COMMANDS[\s\S]*?\{([\s\S]*?)NULL\};\s*\/\* END SERVED_COMMANDS/.exec(source);
    expect(block, "the SERVED block of native/client.c").not.toBeNull();
    const listed = [...(block?.[1] ?? "").matchAll(/"([^"]+)"/g)].map((m) => m[1]);
    expect(listed).toEqual([...SERVED_COMMANDS]);
  });

  it("speaks the same protocol version and socket limits", async () => {
    const p = await import("./protocol.js");
    expect(source).toContain(`#define PROTOCOL_VERSION ${p.PROTOCOL_VERSION}\n`);
    expect(source).toContain(`#define MAX_SOCKET_PATH ${p.MAX_SOCKET_PATH}\n`);
    expect(source).toContain(`"${p.SOCKET_FILE}"`.replace('"', '"%s/'));
  });
});
