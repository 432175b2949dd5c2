/**
 * A step's contract: what its saved script was built to satisfy — the description, the validation
 * schema, the context dependencies and the tools it may call. The Builder stores the contract and
 * its sha256 beside the saved script (`learnings/{step-id}/contract.json`); a run whose step no
 * longer matches refuses the script ("contract changed: rebuild with `ratchet build`"), because a
 * script that passes an old contract proves nothing about the new one.
 *
 * A saved folder without `contract.json` (a script written by hand) is not checked.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import { writeFileAtomic } from "./metadata.js";
import type { WorkflowStep } from "./types.js";

/** The file beside the saved script. Never copied into a run's `code/` folder. */
export const CONTRACT_FILE = "contract.json";

/** The fields that make a step's contract, in a fixed shape. */
export interface StepContract {
  description: string;
  validation: unknown;
  context_dependencies: string[];
  allowed_tools: string[] | null;
}

export interface SavedContract {
  contract_sha256: string;
  contract: StepContract;
}

/** JSON with object keys sorted at every level, so that key order never changes the hash. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The contract of a step. */
export function stepContract(step: WorkflowStep): StepContract {
  return {
    description: step.description,
    validation: step.validation ?? null,
    context_dependencies: [...step.context_dependencies],
    allowed_tools: step.allowed_tools ? [...step.allowed_tools] : null,
  };
}

/** sha256 (hex) of the canonical JSON of the step's contract. */
export function contractHash(step: WorkflowStep): string {
  return createHash("sha256")
    .update(canonical(stepContract(step)))
    .digest("hex");
}

/** Writes `contract.json` into a saved script folder (atomically). */
export function saveContract(learningsStepDir: string, step: WorkflowStep): SavedContract {
  const saved: SavedContract = { contract_sha256: contractHash(step), contract: stepContract(step) };
  writeFileAtomic(join(learningsStepDir, CONTRACT_FILE), `${JSON.stringify(saved, null, 2)}\n`);
  return saved;
}

/**
 * The saved contract of a folder, `undefined` when there is none.
 * @throws RatchetError `malformed_input` when the file is not a saved contract.
 */
export function readContract(learningsStepDir: string): SavedContract | undefined {
  const file = join(learningsStepDir, CONTRACT_FILE);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  try {
    const v = JSON.parse(text) as SavedContract;
    if (typeof v.contract_sha256 !== "string" || typeof v.contract !== "object" || v.contract === null)
      throw new Error("contract_sha256 or contract is missing");
    return v;
  } catch (e) {
    throw new RatchetError(
      ErrorCode.MalformedInput,
      `${file}: not a saved contract: ${(e as Error).message}`,
      {
        file,
      },
    );
  }
}

/**
 * Which contract fields differ between the saved contract and the step (empty: it still holds).
 * A folder without a saved contract is never "changed".
 */
export function changedContractFields(learningsStepDir: string, step: WorkflowStep): string[] {
  const saved = readContract(learningsStepDir);
  if (!saved || saved.contract_sha256 === contractHash(step)) return [];
  const now = stepContract(step) as unknown as Record<string, unknown>;
  const before = saved.contract as unknown as Record<string, unknown>;
  const fields = Object.keys(now).filter((k) => canonical(now[k]) !== canonical(before[k] ?? null));
  return fields.length > 0 ? fields : ["(contract format)"];
}
