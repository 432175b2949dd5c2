/**
 * R2 fallbacks for declared `VAR_*` / `SECRET_*` variables and R3 fallbacks for the variables Ratchet
 * always sets. A missing variable must fail the step loudly, not run it with a made-up value.
 */
import type { EnvReadFact, FallbackKind, ScriptFacts } from "../facts.js";
import type { Finding, ScriptLanguage } from "../types.js";
import { finding } from "./catalog.js";

/** Variables Ratchet sets for every scripted step. */
export const RUNTIME_VARS: ReadonlySet<string> = new Set([
  "STEP_OUTPUT_DIR",
  "STEP_EXECUTION_DIR",
  "MCP_API_URL",
  "MCP_API_TOKEN",
]);

const DECLARABLE = /^(VAR|SECRET)_/;

const HOW: Record<FallbackKind, string> = {
  "default-argument": "a default argument",
  setdefault: "setdefault()",
  or: "an `or`/`||` fallback",
  nullish: "a `??`/`||=` fallback",
  conditional: "a conditional fallback",
  except: "an except clause that substitutes a value",
  "destructuring-default": "a destructuring default",
  reassigned: "a value assigned when it is missing",
};

function requiredRead(language: ScriptLanguage, name: string): string {
  return language === "python"
    ? `os.environ["${name}"] (a KeyError names the missing variable)`
    : `process.env.${name} and throw when it is undefined: if (process.env.${name} === undefined) throw new Error("${name} is not set")`;
}

/** Whether `name` is a declared variable (every VAR_/SECRET_ name when nothing was declared). */
function isDeclared(name: string, declared: ReadonlySet<string> | null): boolean {
  return declared ? declared.has(name) : DECLARABLE.test(name);
}

export function checkEnvFallbacks(facts: ScriptFacts, declared: ReadonlySet<string> | null): Finding[] {
  const out: Finding[] = [];
  for (const read of facts.envReads) {
    const how = read.fallback;
    if (how === null) continue;
    if (RUNTIME_VARS.has(read.name)) out.push(runtimeFinding(facts.language, read, how));
    else if (isDeclared(read.name, declared)) out.push(declaredFinding(facts.language, read, how));
  }
  return out;
}

function runtimeFinding(language: ScriptLanguage, read: EnvReadFact, how: FallbackKind): Finding {
  return finding(
    "R3",
    "blocking",
    read.at,
    `${read.name} is read with ${HOW[how]} (${read.expr}); Ratchet always sets it, so a fallback only hides a broken run`,
    `read it as ${requiredRead(language, read.name)}`,
  );
}

function declaredFinding(language: ScriptLanguage, read: EnvReadFact, how: FallbackKind): Finding {
  // The fallback value itself is never printed: for a SECRET_ it may be a real secret.
  return finding(
    "R2",
    "blocking",
    read.at,
    `declared variable ${read.name} is read with ${HOW[how]} (${read.expr}); a declared variable is required, not defaulted`,
    `read it as ${requiredRead(language, read.name)}; to make it optional, change the workflow's declaration, not the script`,
  );
}
