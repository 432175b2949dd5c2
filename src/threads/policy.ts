/**
 * Action policy: rules by action name (glob with `*`) and effect type. Pure: no I/O.
 * Deny beats RequireApproval beats Allow; a standing grant turns RequireApproval into Allow (never
 * Deny). An action no rule names gets the policy's default.
 */

/** What an action does to the world. Stored as these strings. */
export const EffectType = {
  ReadOnly: "read_only",
  WriteLocal: "write_local",
  WriteExternal: "write_external",
  Compute: "compute",
  Financial: "financial",
  Unknown: "unknown",
} as const;
export type EffectType = (typeof EffectType)[keyof typeof EffectType];

export const Decision = {
  Allow: "allow",
  RequireApproval: "require_approval",
  Deny: "deny",
} as const;
export type Decision = (typeof Decision)[keyof typeof Decision];

export interface PolicyRule {
  /** Action name or glob (`echo__*`, `*`). Omitted: any action. */
  action?: string;
  /** Effect type. Omitted: any effect. */
  effect?: EffectType;
  decision: Decision;
}

export interface Policy {
  rules: PolicyRule[];
  /** Decision when no rule matches. */
  default: Decision;
}

export const DEFAULT_POLICY: Policy = { rules: [], default: "allow" };

const RANK: Record<Decision, number> = { allow: 0, require_approval: 1, deny: 2 };

/** `*` matches any run of characters; everything else is literal. */
export function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(`^${pattern.split("*").map(escapeRe).join(".*")}$`);
  return re.test(name);
}

function escapeRe(s: string): string {
  return s.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

export interface PolicyVerdict {
  decision: Decision;
  /** The rule that decided (undefined: the default). */
  rule?: PolicyRule;
  /** A standing grant turned RequireApproval into Allow. */
  granted?: boolean;
}

/** Evaluates the policy for one action. */
export function evaluatePolicy(
  policy: Policy,
  action: string,
  effect: EffectType,
  opts: { granted?: boolean } = {},
): PolicyVerdict {
  let best: PolicyVerdict | undefined;
  for (const rule of policy.rules) {
    if (rule.action !== undefined && !globMatch(rule.action, action)) continue;
    if (rule.effect !== undefined && rule.effect !== effect) continue;
    if (!best || RANK[rule.decision] > RANK[best.decision]) best = { decision: rule.decision, rule };
  }
  const verdict = best ?? { decision: policy.default };
  if (verdict.decision === "require_approval" && opts.granted)
    return { ...verdict, decision: "allow", granted: true };
  return verdict;
}
