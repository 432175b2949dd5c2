/**
 * Runs a process-runner suite once per transport (the resident spawner, Node's own spawn): each
 * pass switches the transport around its tests and first checks that its children really are
 * started that way.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildEnv, runProcess } from "../../src/exec/index.js";
import {
  expectedParent,
  spawnerMissing,
  TRANSPORTS,
  type Transport,
  useTransport,
} from "../../src/exec/spawner-kit.js";

export function overEachTransport(body: (transport: Transport) => void): void {
  describe.each(TRANSPORTS)("over %s", (transport) => {
    let restore = (): void => {};
    beforeAll(async () => {
      restore = await useTransport(transport);
    });
    afterAll(() => restore());

    it("starts its children through this transport", async () => {
      if (transport === "spawner") expect(spawnerMissing()).toBeUndefined();
      const r = await runProcess({
        command: "sh",
        args: ["-c", "echo $PPID"],
        env: buildEnv({ inherit: "minimal" }),
      });
      expect(Number(r.stdout)).toBe(expectedParent(transport));
    });

    body(transport);
  });
}
