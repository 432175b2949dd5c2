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

export class Redactor {
  readonly #secrets = new Map<string, string>();

  /** Registers a secret value under a name; the text `[REDACTED:NAME]` replaces it. */
  add(name: string, value: string | undefined): this {
    if (value && value.length >= MIN_SECRET_LENGTH) this.#secrets.set(value, name);
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
    let out = text;
    // Longest first, so a secret that contains another is masked whole.
    const values = [...this.#secrets.keys()].sort((a, b) => b.length - a.length);
    for (const v of values) {
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
