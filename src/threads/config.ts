/**
 * The `threads` section of the workspace config file (`.ratchet/config.json`), parsed once with zod
 * into a {@link ThreadsConfig}; errors name the field. Other sections belong to other modules.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { ErrorCode, RatchetError } from "../core/index.js";
import {
  DEFAULT_APPROVAL_TTL_MS,
  DEFAULT_LEASE_USES,
  DEFAULT_MAX_COST_USD,
  DEFAULT_MAX_DURATION_MS,
  DEFAULT_MAX_STEPS,
  DEFAULT_MAX_TOKENS,
} from "./limits.js";
import { Decision, EffectType, type Policy } from "./policy.js";

export const DEFAULT_SYSTEM_PROMPT =
  "You are an agent working inside Ratchet. Use the tools you are given when they help; every call is checked by a policy and may need a person's approval. " +
  "To compute something, write a fenced ```python block (it runs in a sandbox; print() shows output, llm_query(prompt) asks a model, FINAL(value) ends the thread with value). " +
  "When you are done, answer in plain text without calling a tool.";

const decision = z.enum([Decision.Allow, Decision.RequireApproval, Decision.Deny]);
const effect = z.enum(Object.values(EffectType) as [EffectType, ...EffectType[]]);

const schema = z.strictObject({
  system_prompt: z.string().min(1).optional(),
  policy: z
    .strictObject({
      default: decision.default("allow"),
      rules: z
        .array(z.strictObject({ action: z.string().min(1).optional(), effect: effect.optional(), decision }))
        .default([]),
    })
    .optional(),
  /** Effect type of actions, by name or glob. */
  effects: z.record(z.string(), effect).default({}),
  leases: z
    .array(
      z.strictObject({
        actions: z.string().min(1),
        uses: z.number().int().positive().nullable().default(DEFAULT_LEASE_USES),
        ttl_seconds: z.number().int().positive().optional(),
      }),
    )
    .optional(),
  budget: z
    .strictObject({
      max_tokens: z.number().int().positive().default(DEFAULT_MAX_TOKENS),
      max_duration_ms: z.number().int().positive().default(DEFAULT_MAX_DURATION_MS),
      max_cost_usd: z.number().positive().default(DEFAULT_MAX_COST_USD),
      max_steps: z.number().int().positive().default(DEFAULT_MAX_STEPS),
    })
    .optional(),
  pricing: z
    .strictObject({
      input_per_1k_tokens: z.number().nonnegative().default(0),
      output_per_1k_tokens: z.number().nonnegative().default(0),
    })
    .optional(),
  /** Seconds an approval request can be decided before it expires. */
  approval_ttl_seconds: z.number().int().positive().optional(),
  /** Let versions written by the learning missions run (default off, as the original gated them). */
  self_modify: z.boolean().default(false),
  missions: z
    .strictObject({
      enabled: z.boolean().default(true),
      daily_cap: z.number().int().nonnegative().optional(),
    })
    .optional(),
});

export interface ThreadsConfig {
  systemPrompt: string;
  policy: Policy;
  effects: Record<string, EffectType>;
  leases: { actions: string; uses: number | null; ttlSeconds?: number }[];
  budget: { max_tokens: number; max_duration_ms: number; max_cost_usd: number; max_steps: number };
  pricing: { input_per_1k_tokens: number; output_per_1k_tokens: number };
  missions: { enabled: boolean; dailyCap?: number };
  /** Versions the missions wrote run only when true. */
  selfModify: boolean;
  /** How long an approval request can be decided. */
  approvalTtlMs: number;
}

/** Compiles the `threads` section (undefined: every default). @throws RatchetError `schema_violation`. */
export function compileThreadsConfig(value: unknown, source = "config"): ThreadsConfig {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = `threads.${issue?.path.map(String).join(".") ?? ""}`;
    throw new RatchetError(ErrorCode.SchemaViolation, `${source}: ${field}: ${issue?.message ?? "invalid"}`, {
      field,
    });
  }
  const c = parsed.data;
  return {
    systemPrompt: c.system_prompt ?? DEFAULT_SYSTEM_PROMPT,
    policy: c.policy ? { default: c.policy.default, rules: c.policy.rules } : { default: "allow", rules: [] },
    effects: c.effects,
    leases: (c.leases ?? [{ actions: "*", uses: DEFAULT_LEASE_USES }]).map((l) => ({
      actions: l.actions,
      uses: l.uses,
      ...("ttl_seconds" in l && l.ttl_seconds !== undefined ? { ttlSeconds: l.ttl_seconds } : {}),
    })),
    budget: c.budget ?? {
      max_tokens: DEFAULT_MAX_TOKENS,
      max_duration_ms: DEFAULT_MAX_DURATION_MS,
      max_cost_usd: DEFAULT_MAX_COST_USD,
      max_steps: DEFAULT_MAX_STEPS,
    },
    pricing: c.pricing ?? { input_per_1k_tokens: 0, output_per_1k_tokens: 0 },
    selfModify: c.self_modify,
    approvalTtlMs: c.approval_ttl_seconds ? c.approval_ttl_seconds * 1000 : DEFAULT_APPROVAL_TTL_MS,
    missions: {
      enabled: c.missions?.enabled ?? true,
      ...(c.missions?.daily_cap !== undefined ? { dailyCap: c.missions.daily_cap } : {}),
    },
  };
}

/** Reads the `threads` section of `config.json` in the workspace folder `.ratchet/` (absent file: defaults). */
export function loadThreadsConfig(workspaceDir: string): ThreadsConfig {
  const path = join(workspaceDir, "config.json");
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return compileThreadsConfig(undefined);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new RatchetError(ErrorCode.MalformedInput, `${path} is not valid JSON: ${(e as Error).message}`, {
      file: path,
    });
  }
  return compileThreadsConfig((json as { threads?: unknown }).threads, path);
}
