/** A rolling tail of text (the last `max` characters), for a server's or a tool's stderr. */
export class TextTail {
  #text = "";

  constructor(readonly max: number) {}

  push(chunk: string): void {
    this.#text += chunk;
    if (this.#text.length > this.max * 2) this.#text = this.#text.slice(-this.max);
  }

  get text(): string {
    return this.#text.length > this.max ? `…${this.#text.slice(-this.max)}` : this.#text;
  }
}

/** The last `max` characters of `text`, trimmed, with a leading ellipsis when cut. */
export function tailOf(text: string, max: number): string {
  const t = text.trim();
  return t.length > max ? `…${t.slice(-max)}` : t;
}
