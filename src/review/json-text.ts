/** Whether a text is a JSON result: a non-empty JSON object or array. Pure. */
export function isJsonText(text: string | undefined): boolean {
  if (text === undefined) return false;
  const t = text.trim();
  if (!(t.startsWith("{") || t.startsWith("["))) return false;
  try {
    const v: unknown = JSON.parse(t);
    return Array.isArray(v) ? v.length > 0 : typeof v === "object" && v !== null && Object.keys(v).length > 0;
  } catch {
    return false;
  }
}
