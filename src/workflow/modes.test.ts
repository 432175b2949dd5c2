import { describe, expect, it } from "vitest";
import { resolveMode } from "./modes.js";
import type { AgentConfigs, ExecutionMode } from "./types.js";

type Declared = ExecutionMode | undefined;
type Use = boolean | undefined;

const DECLARED: Declared[] = [undefined, "direct", "code_exec", "learn_code"];
const USE: Use[] = [undefined, true, false];

/**
 * The expected outcome given the EFFECTIVE declared mode and the EFFECTIVE use flag, written out by
 * hand from the spec (not computed): learn_code only when declared learn_code; declaring learn_code
 * or code_exec forces code execution on; code_exec is the fallback whenever code execution is on.
 */
const EXPECTED: Record<string, [ExecutionMode, boolean]> = {
  "undefined/undefined": ["direct", false],
  "undefined/true": ["code_exec", true],
  "undefined/false": ["direct", false],
  "direct/undefined": ["direct", false],
  "direct/true": ["code_exec", true],
  "direct/false": ["direct", false],
  "code_exec/undefined": ["code_exec", true],
  "code_exec/true": ["code_exec", true],
  "code_exec/false": ["code_exec", true],
  "learn_code/undefined": ["learn_code", true],
  "learn_code/true": ["learn_code", true],
  "learn_code/false": ["learn_code", true],
};

function cfg(declared: Declared, use: Use): AgentConfigs {
  return {
    ...(declared !== undefined ? { declared_execution_mode: declared } : {}),
    ...(use !== undefined ? { use_code_execution_mode: use } : {}),
  };
}

const rows: [Declared, Use, Declared, Use][] = [];
for (const sd of DECLARED)
  for (const su of USE) for (const dd of DECLARED) for (const du of USE) rows.push([sd, su, dd, du]);

describe("resolveMode", () => {
  it("covers every combination (step declared × step use × default declared × default use)", () => {
    expect(rows).toHaveLength(4 * 3 * 4 * 3);
  });

  it.each(rows)("step {declared: %s, use: %s} / default {declared: %s, use: %s}", (sd, su, dd, du) => {
    // Step overrides workflow default, field by field.
    const declared = sd ?? dd;
    const use = su ?? du;
    const [mode, codeExecution] = EXPECTED[`${declared}/${use}`]!;
    const r = resolveMode({ agent_configs: cfg(sd, su) }, cfg(dd, du));
    expect(r.mode).toBe(mode);
    expect(r.codeExecution).toBe(codeExecution);
    expect(r.reason.length).toBeGreaterThan(0);
  });

  it("matches the spec's settings table", () => {
    const none = {};
    expect(resolveMode({ agent_configs: { use_code_execution_mode: false } }, none).mode).toBe("direct");
    expect(
      resolveMode(
        { agent_configs: { use_code_execution_mode: true, declared_execution_mode: "code_exec" } },
        none,
      ).mode,
    ).toBe("code_exec");
    expect(
      resolveMode(
        { agent_configs: { use_code_execution_mode: true, declared_execution_mode: "learn_code" } },
        none,
      ).mode,
    ).toBe("learn_code");
  });

  it("learn_code is never inferred from the use flag alone", () => {
    expect(resolveMode({ agent_configs: { use_code_execution_mode: true } }, {}).mode).toBe("code_exec");
  });

  it("the workflow default does not enable code execution when the step turns it off", () => {
    const r = resolveMode(
      { agent_configs: { use_code_execution_mode: false } },
      { use_code_execution_mode: true },
    );
    expect(r).toMatchObject({ mode: "direct", codeExecution: false });
    expect(r.reason).toContain("the step sets use_code_execution_mode: false");
  });

  it("says which setting decided", () => {
    expect(resolveMode({ agent_configs: {} }, { declared_execution_mode: "learn_code" }).reason).toBe(
      "the workflow default declares learn_code (code execution forced on)",
    );
    expect(resolveMode({ agent_configs: { declared_execution_mode: "code_exec" } }, {}).reason).toBe(
      "the step declares code_exec (code execution forced on)",
    );
    expect(resolveMode({ agent_configs: {} }, {}).reason).toBe(
      "use_code_execution_mode is not set (off), so direct",
    );
    expect(
      resolveMode({ agent_configs: { declared_execution_mode: "direct", use_code_execution_mode: true } }, {})
        .reason,
    ).toBe(
      "the step sets use_code_execution_mode: true; the step declares direct; not learn_code, so code_exec",
    );
  });
});
