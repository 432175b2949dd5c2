/**
 * The side list's filter bar and paging. The bar is built once per tab inside `#filters` (so a live
 * redraw of the list never takes the focus or the typed text from it); its values, and how many
 * pages are shown, live here per tab. Paging follows the API's `next_cursor`.
 */
import { get, type Json } from "./api.js";
import { h, mount } from "./dom.js";

export interface Field {
  name: string;
  label: string;
  type: "select" | "text" | "date" | "check";
  options?: readonly string[];
}

const values = new Map<string, Record<string, string>>();
const pages = new Map<string, number>();
let redraw: () => void = () => {};

/** What the bar and "load more" call when they change something. */
export function onFilterChange(fn: () => void): void {
  redraw = fn;
}

/** Builds the bar of `tab` (once) and returns its values (empty ones left out). */
export function filterBar(tab: string, fields: readonly Field[]): Record<string, string> {
  const el = document.getElementById("filters") as HTMLElement;
  const v = values.get(tab) ?? {};
  values.set(tab, v);
  if (el.dataset.for !== tab) {
    el.dataset.for = tab;
    const changed = (name: string, value: string) => {
      if (value) v[name] = value;
      else delete v[name];
      pages.set(tab, 1);
      redraw();
    };
    mount(
      el,
      fields.map((f) => {
        const id = `filter-${f.name}`;
        if (f.type === "check") {
          const box = h("input", { type: "checkbox", id, "data-filter": f.name });
          box.checked = v[f.name] === "1";
          box.addEventListener("change", () => changed(f.name, box.checked ? "1" : ""));
          return h("label", { class: "filter check" }, box, ` ${f.label}`);
        }
        const input =
          f.type === "select"
            ? h(
                "select",
                { id, "data-filter": f.name },
                h("option", { value: "" }, `any ${f.label}`),
                (f.options ?? []).map((o) => h("option", { value: o }, o)),
              )
            : h("input", {
                id,
                type: f.type === "date" ? "date" : "text",
                placeholder: f.label,
                "data-filter": f.name,
                autocomplete: "off",
              });
        input.value = v[f.name] ?? "";
        input.addEventListener("change", () => changed(f.name, input.value.trim()));
        return h(
          "label",
          { class: "filter", title: f.label },
          f.type === "date" ? `${f.label} ` : null,
          input,
        );
      }),
    );
    el.hidden = fields.length === 0;
  }
  return { ...v };
}

/** No filter bar on this tab. */
export function noFilters(tab: string): void {
  const el = document.getElementById("filters") as HTMLElement;
  if (el.dataset.for === tab) return;
  el.dataset.for = tab;
  mount(el);
  el.hidden = true;
}

/** Starts a tab's list over at one page (a new search). */
export function firstPage(tab: string): void {
  pages.set(tab, 1);
}

/**
 * The items of as many pages of `path` (with `query`) as the tab shows, and the cursor after them.
 * `key` names the array of items in a reply (`items`, or `threads`).
 */
export async function pagedItems(
  tab: string,
  path: string,
  query: Record<string, string>,
  key = "items",
): Promise<{ items: Json[]; next: string | null }> {
  const want = pages.get(tab) ?? 1;
  const items: Json[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < want; i++) {
    const qs = new URLSearchParams({ ...query, ...(cursor ? { cursor } : {}) });
    const page = await get(`${path}?${qs}`);
    items.push(...(page[key] ?? []));
    cursor = page.next_cursor ?? null;
    if (!cursor) break;
  }
  return { items, next: cursor };
}

/** The "load more" button under a list, or nothing when the list is complete. */
export function loadMore(tab: string, next: string | null, shown: number): HTMLElement {
  if (!next) return h("p", { class: "meta", "data-list-end": "" }, `${shown} shown · end of the list`);
  return h(
    "button",
    {
      class: "load-more",
      "data-action": "load-more",
      onclick: () => {
        pages.set(tab, (pages.get(tab) ?? 1) + 1);
        redraw();
      },
    },
    `${shown} shown · load more`,
  );
}

/** A date input's day as the start (`since`) or the end (`until`, exclusive: the next day) in ISO. */
export function dayBound(day: string | undefined, end: boolean): string | undefined {
  if (!day) return undefined;
  const t = Date.parse(`${day}T00:00:00Z`);
  if (Number.isNaN(t)) return undefined;
  return new Date(t + (end ? 86_400_000 : 0)).toISOString();
}
