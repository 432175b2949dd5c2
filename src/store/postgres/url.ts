/** PostgreSQL connection URLs: recognising them and printing them without their password. */

const PG_URL = /^postgres(?:ql)?:\/\//i;

/** True for `postgres://…` and `postgresql://…` (the forms `RATCHET_DB` and `store.url` accept). */
export function isPostgresUrl(s: string | undefined): s is string {
  return s !== undefined && PG_URL.test(s);
}

/** The URL with its password replaced by `***` (for messages and logs). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, "//$1:***@");
  }
}
