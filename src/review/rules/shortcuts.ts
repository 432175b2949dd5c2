/**
 * R9 hardcoded shortcuts: module-level cache/shortcut variables holding literals, a successful exit
 * before any work, and literal data written as the step's output. Every output value must come from
 * a real source on every run.
 */
import type { ScriptFacts } from "../facts.js";
import type { Finding } from "../types.js";
import { byLanguage, finding } from "./catalog.js";

/** What a module-level literal is: a data structure, a string, or a flag/number. */
export type LiteralKind = "container" | "string" | "scalar";

/** Words that announce a stored result whatever it holds (`CACHED_TOKEN = "…"`). */
const STORED = /(^|_)(CACHED|HARD_?CODED|PRECOMPUTED|CANNED)(_|$)/i;
/** Words that announce a switch around the real work (`SKIP_FETCH = True`, `USE_MOCK = 1`). */
const SWITCH = /(^|_)(SKIP|BYPASS|FORCE_SUCCESS|MOCK(ED)?|FAKE|STUB(BED)?|DUMMY|SHORTCUT)(_|$)/i;
/** Words of a setting rather than a result (`MAX_CACHED_INPUTS = 32`, `CACHED_DIR = "…"`). */
const SETTING = /(^|_)(MAX|MIN|LIMIT|TTL|SIZE|TIMEOUT|SECONDS|DIR|PATH|FILE|NAME)(_|$)/i;
/** Names that only count when they hold a data structure (`RESULT = [...]`). */
const DATA = /^(CACHE|RESULTS?|OUTPUT|RESPONSE|ANSWER)$/i;

/**
 * True when a module-level `name = <truthy literal of kind>` is a hardcoded shortcut: a stored
 * result of any kind, a switch or fake holding data or a flag, or a result-named data structure.
 */
export function isShortcutVariable(name: string, kind: LiteralKind): boolean {
  if (SETTING.test(name)) return false;
  if (STORED.test(name)) return true;
  if (SWITCH.test(name)) return kind !== "string";
  return DATA.test(name) && kind === "container";
}

export function checkShortcuts(facts: ScriptFacts): Finding[] {
  const lang = facts.language;
  const out: Finding[] = [];
  for (const v of facts.cacheVars) {
    out.push(
      finding(
        "R9",
        "blocking",
        v.at,
        `module-level ${v.name} holds a hardcoded value: a cached or shortcut result makes every run repeat the first one`,
        "compute the value on every run from its real source (a tool call through the bridge, an input file, a declared variable)",
      ),
    );
  }
  for (const e of facts.earlyExits) {
    out.push(
      finding(
        "R9",
        "blocking",
        e.at,
        `${e.api} exits successfully before the script has done any work`,
        byLanguage(
          lang,
          "remove the early exit; exit non-zero (sys.exit(1) or raise) when the step cannot do its work",
          "remove the early exit; exit non-zero (process.exit(1) or throw) when the step cannot do its work",
        ),
      ),
    );
  }
  for (const c of facts.constantOutputs) {
    out.push(
      finding(
        "R9",
        "warning",
        c.at,
        `${c.api} writes a literal data structure as output`,
        "write values that come from a real source; a literal output passes validation without doing the work",
      ),
    );
  }
  return out;
}

/** R13: a JSON text literal written as the output is a result fixed in the script, not computed. */
export function checkJsonResults(facts: ScriptFacts): Finding[] {
  return facts.jsonResults.map((j) =>
    finding(
      "R13",
      "blocking",
      j.at,
      `${j.api} writes a JSON text literal as output: a hardcoded result`,
      "build the output from values the script got on this run (a tool call, an API response, an input file) and serialise it",
    ),
  );
}
