/**
 * Input schemas of the words flows (`note`, `reference-add`, `reference-mark`) and the pieces they
 * share: the `--at` date form, the `--ref kind=…,label=…[,uri=…]` form, record ids.
 */
import {
  bool,
  ErrorCode,
  type Infer,
  MAX_TEXT_CHARS,
  obj,
  oneOf,
  opt,
  RatchetError,
  type Schema,
  str,
} from "../../core/index.js";
import { REFERENCE_KINDS, STANCES, VERDICTS, VISIBILITIES } from "./types.js";

function refuse(path: string, message: string): never {
  throw new RatchetError(ErrorCode.SchemaViolation, `field \`${path}\`: ${message}`, { field: path });
}

const WHEN = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?(Z|[+-]\d{2}:\d{2})?$/;

/**
 * `YYYY-MM-DD[ HH:MM[:SS]]` (`T` allowed, an optional `Z` or `±HH:MM`; without one the time is
 * UTC) → the ISO timestamp rows carry. @throws schema_violation naming `path`.
 */
export function parseWhen(value: string, path: string): string {
  const m = WHEN.exec(value.trim());
  if (!m) return refuse(path, `must be YYYY-MM-DD[ HH:MM[:SS]] (got ${JSON.stringify(value)})`);
  const [, y, mo, d, h = "00", mi = "00", s = "00", zone = "Z"] = m;
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}${zone}`);
  // A real calendar date: Date rolls 2026-02-30 over to March, so read the fields back.
  const check = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)));
  if (
    Number.isNaN(date.getTime()) ||
    check.getUTCMonth() !== Number(mo) - 1 ||
    check.getUTCDate() !== Number(d) ||
    Number(h) > 23 ||
    Number(mi) > 59 ||
    Number(s) > 59
  )
    return refuse(path, `is not a real date and time (got ${JSON.stringify(value)})`);
  return date.toISOString();
}

/** A date in the `--at` form, normalised to ISO UTC. */
export const when = (description: string): Schema<string> => ({
  parse: (v, path) => {
    if (typeof v !== "string") return refuse(path, "must be a string YYYY-MM-DD[ HH:MM[:SS]]");
    return parseWhen(v, path);
  },
  json: () => ({
    type: "string",
    description: `${description} (YYYY-MM-DD[ HH:MM[:SS]], T allowed; UTC unless Z/±HH:MM)`,
  }),
});

/** A record id: a positive integer, or its digits (a positional CLI argument). */
export const recordId = (description: string): Schema<number> => ({
  parse: (v, path) => {
    const n = typeof v === "string" && /^\d+$/.test(v.trim()) ? Number(v.trim()) : v;
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 1)
      return refuse(path, `must be a positive integer id (got ${JSON.stringify(v) ?? String(v)})`);
    return n;
  },
  json: () => ({ type: "integer", minimum: 1, description }),
});

const label = str({
  min: 1,
  max: 512,
  description: "what the source is (1–512 characters): a pointer, never its body",
});
const uri = str({
  min: 1,
  max: 2048,
  pattern: /^\S+$/,
  description: "where the source is (a link; no spaces); not for verbal",
});

export const RefSpec = obj({
  kind: oneOf(REFERENCE_KINDS, "source kind"),
  label,
  uri: opt(uri),
});
export type RefSpec = Infer<typeof RefSpec>;

/** `kind=K,label=L[,uri=U]` → a ref (a label or uri may hold commas). @throws usage naming `ref`. */
export function parseRefFlag(value: string, index: number): Record<string, string> {
  const field = `refs[${index}]`;
  const out: Record<string, string> = {};
  const parts = value.split(/,(?=\s*(?:kind|label|uri)=)/);
  for (const p of parts) {
    const eq = p.indexOf("=");
    const key = eq > 0 ? p.slice(0, eq).trim() : "";
    if (!["kind", "label", "uri"].includes(key))
      throw new RatchetError(
        ErrorCode.Usage,
        `--ref ${JSON.stringify(value)}: expected kind=K,label=L[,uri=U] (bad part ${JSON.stringify(p)})`,
        { field },
      );
    if (out[key] !== undefined)
      throw new RatchetError(ErrorCode.Usage, `--ref ${JSON.stringify(value)}: ${key}= given twice`, {
        field,
      });
    out[key] = p.slice(eq + 1);
  }
  for (const k of ["kind", "label"])
    if (out[k] === undefined)
      throw new RatchetError(ErrorCode.Usage, `--ref ${JSON.stringify(value)}: ${k}= is required`, {
        field: `${field}.${k}`,
      });
  return out;
}

export const NOTE_KINDS = ["technical", "organizational", "mixed"] as const;

export const NoteInput = obj({
  text: str({ min: 1, max: MAX_TEXT_CHARS, description: "the words, as they were said" }),
  at: when("when they were said (becomes occurred_at)"),
  project: opt(
    str({
      min: 1,
      max: 200,
      description: "registered project (default: the one whose repo holds the current folder)",
    }),
  ),
  plan_id: opt(str({ min: 1, max: 200, description: "plan the words belong to" })),
  node: opt(
    str({
      min: 1,
      max: 1000,
      description: "qualified name, nk_… key or file:line: also record a stated reason for it",
    }),
  ),
  kind: opt(oneOf(NOTE_KINDS, "kind of the reason (default organizational)")),
  refs: opt(arrOf(RefSpec, "sources the words rest on: [{kind, label, uri?}]")),
  json: opt(bool("accepted for the CLI's --json; the output is always JSON")),
});
export type NoteInput = Infer<typeof NoteInput>;

function arrOf<T>(item: Schema<T>, description: string): Schema<T[]> {
  return {
    parse(v, path) {
      if (!Array.isArray(v)) return refuse(path, "must be an array");
      if (v.length > 100) return refuse(path, `must have at most 100 items (got ${v.length})`);
      return v.map((x, i) => item.parse(x, `${path}[${i}]`));
    },
    json: () => ({ type: "array", items: item.json(), maxItems: 100, description }),
  };
}

export const ReferenceAddInput = obj({
  kind: oneOf(REFERENCE_KINDS, "source kind"),
  label,
  occurred_at: when("when the source happened"),
  utterance: opt(recordId("the utterance it backs (for sources named before any reason exists)")),
  reason: opt(recordId("the reason it backs")),
  utterance_id: opt(recordId("same as utterance")),
  reason_id: opt(recordId("same as reason")),
  uri: opt(uri),
  stance: opt(oneOf(STANCES, "how it bears on the anchor (default supports)")),
  visibility: opt(oneOf(VISIBILITIES, "default shareable")),
  project: opt(str({ min: 1, max: 200, description: "registered project (default: the anchor's)" })),
  json: opt(bool("accepted for the CLI's --json; the output is always JSON")),
});
export type ReferenceAddInput = Infer<typeof ReferenceAddInput>;

export const ReferenceMarkInput = obj({
  reference_id: recordId("the reference checked"),
  verdict: opt(oneOf(VERDICTS, "what the check found")),
  ok: opt(bool("verdict ok")),
  gone: opt(bool("verdict gone")),
  moved: opt(bool("verdict moved")),
  no_access: opt(bool("verdict no_access")),
  note: opt(str({ max: MAX_TEXT_CHARS, description: "what was seen" })),
  json: opt(bool("accepted for the CLI's --json; the output is always JSON")),
});
export type ReferenceMarkInput = Infer<typeof ReferenceMarkInput>;
