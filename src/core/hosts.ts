/**
 * Which `Host` and `Origin` headers a loopback HTTP server answers (DNS-rebinding defence). A page
 * on `http://evil.example` whose name is re-pointed at 127.0.0.1 reaches a loopback server, but its
 * requests still carry `Host: evil.example` (and `Origin: http://evil.example` on writes), so a
 * server that answers only the names it is known by cannot be read or driven that way.
 *
 * Pure: no I/O. The HTTP server (`server/`) and the tool bridge (`bridge/`) use it.
 */

/** Names a loopback server is always known by. */
export const LOOPBACK_HOSTS: readonly string[] = ["127.0.0.1", "localhost", "[::1]"];

/** Host names (lower case, IPv6 in brackets) and ports a server answers. */
export interface HostPolicy {
  /**
   * Extra allowed hosts: `name` (any port) or `name:port` (that port only). Lower-cased when
   * compiled. IPv6 literals are written in brackets (`[fd00::1]:8765`).
   */
  allowed: readonly string[];
  /** The port the server listens on; undefined before it listens (then any port is accepted). */
  port: () => number | undefined;
}

interface HostPort {
  name: string;
  port?: number;
}

/** Splits `name[:port]` (IPv6 in brackets) into a lower-case name and a port. Undefined when malformed. */
export function splitHostPort(raw: string): HostPort | undefined {
  const s = raw.trim().toLowerCase();
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/.exec(s);
  if (!m?.[1]) return undefined;
  const name = m[1].endsWith(".") ? m[1].slice(0, -1) : m[1];
  if (m[2] === undefined) return { name };
  const port = Number(m[2]);
  return port >= 1 && port <= 65535 ? { name, port } : undefined;
}

/** A bind address as a host name: IPv6 in brackets; undefined for wildcards (`0.0.0.0`, `::`). */
export function bindHostName(host: string): string | undefined {
  const h = host.trim().toLowerCase();
  if (h === "" || h === "0.0.0.0" || h === "::" || h === "[::]") return undefined;
  return h.includes(":") && !h.startsWith("[") ? `[${h}]` : h;
}

function matches(given: HostPort, policy: HostPolicy, defaultPort: number | undefined): boolean {
  const bound = policy.port();
  const effective = given.port ?? defaultPort;
  if (LOOPBACK_HOSTS.includes(given.name))
    return bound === undefined || effective === undefined || effective === bound;
  for (const entry of policy.allowed) {
    const e = splitHostPort(entry);
    if (!e || e.name !== given.name) continue;
    if (e.port === undefined || e.port === effective) return true;
  }
  return false;
}

/**
 * True when a `Host` header names this server: a loopback name or an allowed host, with the bound
 * port or without one. An absent header (HTTP/1.0, in-process requests) is judged by `fallback`
 * (the request URL's host).
 */
export function hostAllowed(header: string | undefined, policy: HostPolicy, fallback?: string): boolean {
  const raw = header ?? fallback;
  if (raw === undefined) return true;
  const hp = splitHostPort(raw);
  return hp !== undefined && matches(hp, policy, undefined);
}

/**
 * True when an `Origin` header is this server's own origin or an allowed host's. Absent means a
 * non-browser client (allowed); `null` (sandboxed frames, `file:` pages) and any other scheme than
 * http/https are foreign. A loopback origin must carry the bound port (the scheme's default port
 * counts): another local web app on another port is a different origin.
 */
export function originAllowed(header: string | undefined, policy: HostPolicy): boolean {
  if (header === undefined) return true;
  const m = /^(https?):\/\/([^/?#]+)$/i.exec(header.trim());
  if (!m?.[1] || !m[2]) return false;
  const hp = splitHostPort(m[2]);
  if (!hp) return false;
  const defaultPort = m[1].toLowerCase() === "https" ? 443 : 80;
  if (LOOPBACK_HOSTS.includes(hp.name)) {
    const bound = policy.port();
    return bound === undefined || (hp.port ?? defaultPort) === bound;
  }
  return matches(hp, policy, defaultPort);
}
