/** Plan and step id shapes: `<plan>-A`, `<plan>-B`, …, `<plan>-AA`; children `<parent>.1`; `<plan>-REVIEW`. */

/** Letters of the n-th (0-based) top-level step: A…Z, AA…AZ, BA… */
export function stepLetters(n: number): string {
  let s = "";
  let x = n;
  do {
    s = String.fromCharCode(65 + (x % 26)) + s;
    x = Math.floor(x / 26) - 1;
  } while (x >= 0);
  return s;
}

export function topStepId(planId: string, index: number): string {
  return `${planId}-${stepLetters(index)}`;
}

export function childStepId(parentId: string, seq: number): string {
  return `${parentId}.${seq}`;
}

export function reviewStepId(planId: string): string {
  return `${planId}-REVIEW`;
}

/** A plan id from its goal and a `YYYYMMDDHHMMSS` stamp: `fix-login-bug-20260514153045`. */
export function planIdFor(goal: string, stamp: string): string {
  const slug = goal
    .normalize("NFKD")
    .replace(/[^\x20-\x7e]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/g, "");
  return `${slug || "plan"}-${stamp}`;
}
