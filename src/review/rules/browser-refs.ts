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

export const hasBrowserRef = (v: Val): boolean => REF.test(flatten(v));

export function checkBrowserRefs(facts: ScriptFacts): Finding[] {
  return matchingFacts(facts.strings, hasBrowserRef).map((f) =>
    finding(
      "R10",
      "blocking",
      f.at,
      `"${describe(f.value)}" uses a snapshot element ref (@eN), which changes on every page load`,
      "take a fresh snapshot and find the element by a durable selector (role, label, text, test id) on every run",
    ),
  );
}
