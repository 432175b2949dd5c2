/**
 * R11 dynamic code and R12 dynamic lookups: a learned script has no reason to run text as code or
 * to reach a module, global or builtin by a name computed at run time, and review cannot see what
 * either does (`exec(base64.b64decode(…))`, `getattr(os, name)`, `require(name)`). Both block.
 */
import type { ScriptFacts } from "../facts.js";
import type { Finding } from "../types.js";
import { byLanguage, finding } from "./catalog.js";

export function checkDynamicCode(facts: ScriptFacts): Finding[] {
  const lang = facts.language;
  return facts.dynamicCode.map((d) =>
    d.kind === "exec"
      ? finding(
          "R11",
          "blocking",
          d.at,
          `${d.api} runs code built at run time, which review cannot see`,
          byLanguage(
            lang,
            "write the code itself in the script; parse data with json.loads or ast.literal_eval, never eval/exec/compile",
            "write the code itself in the script; parse data with JSON.parse, never eval, Function or vm",
          ),
        )
      : finding(
          "R12",
          "blocking",
          d.at,
          `${d.api} reaches a module, global or builtin by a name computed at run time, which review cannot see`,
          byLanguage(
            lang,
            "import what you use by name (import os, from x import y) and call it directly; map data to functions with an explicit dict",
            'import what you use by name (import { x } from "y") and call it directly; map data to functions with an explicit object',
          ),
        ),
  );
}
