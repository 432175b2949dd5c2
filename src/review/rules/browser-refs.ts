/**
 * R10 ephemeral browser refs: `@e12`-style element refs come from one page snapshot and mean nothing
 * on the next run.
 */
import type { ScriptFacts } from "../facts.js";
import type { Finding } from "../types.js";
import { describe, flatten, type Val } from "../values.js";
import { finding } from "./catalog.js";
import { matchingFacts } from "./run-paths.js";

const REF = /(^|[^\w@.-])@e\d+(?!\w)/;
/** The same ref in JSON text: `{"ref": "e12"}`. */
const JSON_REF = /["']ref["']\s*:\s*["']@?e\d+["']/;

export const hasBrowserRef = (v: Val): boolean => {
  const text = flatten(v);
  return REF.test(text) || JSON_REF.test(text);
};

const FIX =
  "take a fresh snapshot and find the element by a durable selector (role, label, text, test id) on every run";

export function checkBrowserRefs(facts: ScriptFacts): Finding[] {
  const asData = facts.browserRefs.map((r) =>
    finding(
      "R10",
      "blocking",
      r.at,
      `ref "${r.ref}" is a snapshot element ref, which changes on every page load`,
      FIX,
    ),
  );
  return asData.concat(
    matchingFacts(facts.strings, hasBrowserRef).map((f) =>
      finding(
        "R10",
        "blocking",
        f.at,
        `"${describe(f.value)}" uses a snapshot element ref (@eN), which changes on every page load`,
        FIX,
      ),
    ),
  );
}
