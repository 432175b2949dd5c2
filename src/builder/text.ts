/** Small text helpers of the Builder. Pure. */

/** `text` whole when short, else its first `head` and last `tail` characters around a marker. */
export function headTailChars(text: string, head: number, tail: number): string {
  if (text.length <= head + tail) return text;
  const omitted = text.length - head - tail;
  return `${text.slice(0, head)}\n…[${omitted} chars omitted]…\n${text.slice(text.length - tail)}`;
}
