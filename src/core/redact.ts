/**
 * Secret redaction. A {@link Redactor} knows secret values (from `SECRET_*` variables, tokens, API
 * keys) and replaces every occurrence in text it is given. It also masks common credential shapes
 * (bearer tokens, `sk-…` keys) even when their values were never registered.
 */

/** Secrets shorter than this are not registered: masking them would shred ordinary text. */
export const MIN_SECRET_LENGTH = 4;

const SHAPES: RegExp[] = [
  /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{16,}/g,
  /\b(sk-(?:ant-)?)[A-Za-z0-9_-]{16,}/g,
  /\b(gh[pousr]_)[A-Za-z0-9]{20,}/g,
];

/** The shortest text a credential shape can match (`sk-` and 16 characters). */
const SHORTEST_SHAPE = 19;

export class Redactor {
  readonly #secrets = new Map<string, string>();
  /** The registered values longest first (so one that contains another is masked whole); built once per change. */
  #ordered: string[] | undefined;
  /** Text shorter than this can hold neither a registered secret nor a credential shape. */
  #shortest = SHORTEST_SHAPE;

  /** Registers a secret value under a name; the text `[REDACTED:NAME]` replaces it. */
  add(name: string, value: string | undefined): this {
    if (value && value.length >= MIN_SECRET_LENGTH) {
      this.#secrets.set(value, name);
      this.#ordered = undefined;
      this.#shortest = Math.min(this.#shortest, value.length);
    }
    return this;
  }

  /** Registers every `SECRET_*` variable (and well-known key variables) of an environment. */
  addFromEnv(env: Record<string, string | undefined>): this {
    for (const [k, v] of Object.entries(env)) {
      if (k.startsWith("SECRET_") || /(_API_KEY|_TOKEN|_SECRET|_PASSWORD)$/.test(k)) this.add(k, v);
    }
    return this;
  }

  get size(): number {
    return this.#secrets.size;
  }

  /** Returns `text` with every registered secret and every credential shape masked. */
  redact(text: string): string {
    if (text.length < this.#shortest) return text;
    let out = text;
    this.#ordered ??= [...this.#secrets.keys()].sort((a, b) => b.length - a.length);
    for (const v of this.#ordered) {
      if (out.includes(v)) out = out.split(v).join(`[REDACTED:${this.#secrets.get(v)}]`);
    }
    for (const re of SHAPES) out = out.replace(re, (_m, prefix: string) => `${prefix}[REDACTED]`);
    return out;
  }

  /** Redacts every string inside a JSON-like value. */
  redactValue<T>(value: T): T {
    if (typeof value === "string") return this.redact(value) as T;
    if (Array.isArray(value)) return value.map((v) => this.redactValue(v)) as T;
    if (value && typeof value === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = this.redactValue(v);
      return out as T;
    }
    return value;
  }
}
