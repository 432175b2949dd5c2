/**
 * The deterministic text pieces of close-time reasons (spec §4.2, §4.5): tokens, slot keys,
 * sentence splitting with character offsets, the R0 literal test and the draft's scoring. Pure:
 * no I/O, no clock.
 *
 * Offsets are **code points** (the spec's "character offsets", as the original's Python counts
 * them), not UTF-16 units: an emoji or a CJK character outside the BMP is one character.
 */

/** Words never worth a match: English glue and the verbs of every edit. */
export const STOPWORDS: ReadonlySet<string> = new Set([
  "the",
  "and",
  "for",
  "with",
  "this",
  "that",
  "these",
  "those",
  "from",
  "into",
  "onto",
  "but",
  "are",
  "was",
  "were",
  "has",
  "have",
  "had",
  "its",
  "our",
  "your",
  "you",
  "all",
  "any",
  "can",
  "should",
  "would",
  "will",
  "just",
  "also",
  "then",
  "than",
  "when",
  "what",
  "which",
  "who",
  "why",
  "how",
  "use",
  "make",
  "please",
  "function",
  "method",
  "step",
  "code",
  "change",
  "update",
  "add",
  "fix",
  "refactor",
  "touch",
]);

/** Local names too common to count as naming a node (R0). */
export const R0_COMMON_NAMES: ReadonlySet<string> = new Set([
  "run",
  "main",
  "load",
  "save",
  "test",
  "init",
  "setup",
  "data",
  "value",
  "item",
  "index",
  "count",
  "name",
  "path",
  "file",
]);

/** Points added when a sentence names the node literally. */
export const R0_BONUS = 10;
/** Candidates kept per slot. */
export const DRAFT_TOP = 2;
/** Characters of a candidate's preview. */
export const PREVIEW_CHARS = 120;
/** A sentence naming more nodes than this is generic (R0 logs `ambiguous`). */
export const R0_GENERIC_NODES = 3;

const IDENT = /[A-Za-z_][A-Za-z0-9_]{2,}/g;

/** Identifiers of ≥ 3 characters, lower-cased, minus stopwords, in order of first appearance. */
export function tokens(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(IDENT)) {
    const t = m[0].toLowerCase();
    if (!STOPWORDS.has(t)) out.add(t);
  }
  return out;
}

/** The local name: the last segment after `.` and `:` (`a.b:df.col` → `col`). */
export function localName(qualifiedName: string): string {
  const parts = qualifiedName.split(/[.:]/);
  return parts[parts.length - 1] ?? qualifiedName;
}

/**
 * A slot's keys: tokens of the local name, of the local name with `_`→space, and of the parent
 * segment (the `.`-segment before the last one: `shop.pipeline.load_orders:df.fiscal_week` → the
 * parent `load_orders:df`, whose token is `load_orders`).
 */
export function slotKeys(qualifiedName: string): Set<string> {
  const local = localName(qualifiedName);
  const dotted = qualifiedName.split(".");
  const parent = dotted.length >= 2 ? (dotted[dotted.length - 2] ?? "") : "";
  return new Set([...tokens(local), ...tokens(local.replaceAll("_", " ")), ...tokens(parent)]);
}

/** A sentence of an utterance: its trimmed text and `[start, end)` in code points. */
export interface Sentence {
  text: string;
  start: number;
  end: number;
}

const HARD_STOPS = new Set(["。", "！", "？", "!", "?"]);
const SPACE = /\s/u;

/**
 * Splits after `。！？!?`, after a `.` followed by whitespace or the end (so `rollup.py` stays
 * whole), and at newlines; each piece trimmed, empty pieces dropped. Offsets in code points.
 */
export function splitSentences(text: string): Sentence[] {
  const cps = Array.from(text);
  const out: Sentence[] = [];
  let from = 0;
  const flush = (to: number) => {
    let a = from;
    let b = to;
    while (a < b && SPACE.test(cps[a] as string)) a++;
    while (b > a && SPACE.test(cps[b - 1] as string)) b--;
    if (b > a) out.push({ text: cps.slice(a, b).join(""), start: a, end: b });
  };
  for (let i = 0; i < cps.length; i++) {
    const c = cps[i] as string;
    if (c === "\n" || c === "\r") {
      flush(i);
      from = i + 1;
    } else if (
      HARD_STOPS.has(c) ||
      (c === "." && (i + 1 === cps.length || SPACE.test(cps[i + 1] as string)))
    ) {
      flush(i + 1);
      from = i + 1;
    }
  }
  flush(cps.length);
  return out;
}

/** Code-point length of a string. */
export function charLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** The code points `[start, end)` of `text`. */
export function charSlice(text: string, start: number, end?: number): string {
  return Array.from(text).slice(start, end).join("");
}

/** What R0 looks for in a sentence: the node's local name, qualified name and file basename. */
export interface NodeNames {
  qualified_name: string;
  file_path?: string | null;
}

/** The literals that name a node (R0): local name (≥ 4 chars, not common), qualified name, file basename. */
export function r0Literals(node: NodeNames): string[] {
  const local = localName(node.qualified_name);
  const out: string[] = [];
  if (charLength(local) >= 4 && !R0_COMMON_NAMES.has(local)) out.push(local);
  out.push(node.qualified_name);
  if (node.file_path) {
    const base = node.file_path.split(/[\\/]/).pop();
    if (base) out.push(base);
  }
  return [...new Set(out)];
}

const WORD_CHAR = /[A-Za-z0-9_]/;

/** Whether `literal` occurs in `text` as a standalone literal: case-sensitive, not glued to `[A-Za-z0-9_]`. */
export function containsLiteral(text: string, literal: string): boolean {
  if (literal === "") return false;
  let at = text.indexOf(literal);
  while (at >= 0) {
    const before = at > 0 ? text[at - 1] : undefined;
    const after = text[at + literal.length];
    if ((before === undefined || !WORD_CHAR.test(before)) && (after === undefined || !WORD_CHAR.test(after)))
      return true;
    at = text.indexOf(literal, at + 1);
  }
  return false;
}

/** The R0 test: the sentence names the node literally. */
export function namesNode(sentence: string, node: NodeNames): boolean {
  return r0Literals(node).some((l) => containsLiteral(sentence, l));
}

/** An utterance a draft may quote. */
export interface CandidateUtterance {
  id: number;
  text: string;
}

/** A draft candidate: it can be sent back unchanged as a stated answer (`utterance_id` + `span`). */
export interface DraftCandidate {
  utterance_id: number;
  span: [number, number];
  score: number;
  kind: "r0" | "overlap";
  preview: string;
}

/**
 * Scores one utterance for one node: shared tokens between the slot keys and the utterance, plus
 * {@link R0_BONUS} when one of its sentences names the node (span = the first such sentence, else
 * the whole utterance). `undefined` when the score is 0 (nothing to propose).
 */
export function scoreUtterance(node: NodeNames, u: CandidateUtterance): DraftCandidate | undefined {
  const keys = slotKeys(node.qualified_name);
  const words = tokens(u.text);
  let shared = 0;
  for (const k of keys) if (words.has(k)) shared++;
  const hit = splitSentences(u.text).find((s) => namesNode(s.text, node));
  const score = shared + (hit ? R0_BONUS : 0);
  if (score === 0) return undefined;
  const span: [number, number] = hit ? [hit.start, hit.end] : [0, charLength(u.text)];
  return {
    utterance_id: u.id,
    span,
    score,
    kind: hit ? "r0" : "overlap",
    preview: charSlice(u.text, span[0], span[0] + PREVIEW_CHARS),
  };
}

/** The top {@link DRAFT_TOP} candidates of a node, by (−score, utterance id). */
export function draftFor(node: NodeNames, utterances: readonly CandidateUtterance[]): DraftCandidate[] {
  return utterances
    .map((u) => scoreUtterance(node, u))
    .filter((c): c is DraftCandidate => c !== undefined)
    .sort((a, b) => b.score - a.score || a.utterance_id - b.utterance_id)
    .slice(0, DRAFT_TOP);
}

/** A reason slot as the checklist shows it. */
export interface SlotLine {
  node_key: string;
  qualified_name: string;
  node_type: string;
  event_types: readonly string[];
}

/** The checklist the review agent shows the user (one question for all open slots). */
export function checklistText(planId: string, slots: readonly SlotLine[]): string {
  if (slots.length === 0) return `plan ${planId}: no changed node needs a reason.`;
  const head = `plan ${planId}: ${slots.length === 1 ? "1 changed node needs" : `${slots.length} changed nodes need`} a reason — answer each in one sentence (why this and not the other way, and who asked), or \`unstated\` when nobody knows:`;
  const lines = slots.map(
    (s, i) => `  ${i + 1}. ${s.qualified_name} (${s.node_type}, ${s.event_types.join("/")}) [${s.node_key}]`,
  );
  return [head, ...lines].join("\n");
}
