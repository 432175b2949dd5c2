/** A tiny element builder: text always goes through textContent, never through HTML parsing. */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | undefined | ((e: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else if (k === "class") el.className = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Replaces the children of `el`. */
export function mount(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/**
 * The tone of a status or outcome: `bad` for every failure (any `*_failed`, refusals, blocks, a
 * missing script or model, a changed contract, timeouts), `ok`, `run`, `wait`, or neutral.
 */
export function tone(status: string): "ok" | "bad" | "run" | "wait" | "none" {
  const s = status.toLowerCase();
  if (
    /fail|error|refused|denied|interrupt|blocked|missing|needs_model|contract_changed|timed_out|timeout|expired|stuck/.test(
      s,
    )
  )
    return "bad";
  if (/^(passed|completed|approved|ok|done|succeeded)$/.test(s)) return "ok";
  if (/^(in_progress|running|started|active)$/.test(s)) return "run";
  if (/review|waiting|awaiting|pending_approval|paused/.test(s)) return "wait";
  return "none";
}

export function badge(status: string | null | undefined): HTMLElement {
  const s = (status ?? "unknown").toString();
  const t = tone(s);
  return h(
    "span",
    {
      class: `badge badge-${s.toLowerCase().replace(/[^a-z_]/g, "")} tone-${t}`,
      "data-status": s,
      "data-tone": t,
    },
    t === "bad" ? `✕ ${s.replace(/_/g, " ")}` : s.replace(/_/g, " "),
  );
}

export function seconds(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? "–" : `${(ms / 1000).toFixed(2)} s`;
}

export function when(iso: string | null | undefined): string {
  if (!iso) return "–";
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
}

/** A unified diff with added and removed lines marked. */
export function diffView(text: string): HTMLElement {
  const pre = h("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    const cls =
      line.startsWith("+++") || line.startsWith("---")
        ? "diff-file"
        : line.startsWith("+")
          ? "diff-add"
          : line.startsWith("-")
            ? "diff-del"
            : line.startsWith("@@")
              ? "diff-hunk"
              : "";
    pre.append(h("span", { class: cls }, `${line}\n`));
  }
  return pre;
}
