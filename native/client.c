/*
 * ratchet-client: the native fast path of `ratchet <write flow>` (docs/daemon.md).
 *
 * A Node process needs ~40-90 ms to start before it runs a line of ours; this program needs about
 * one. It does what src/daemon/client.ts does, in the same order and with the same rules, and
 * nothing more: it serves a command through the workspace's daemon (.ratchet/daemon.sock) only
 * when everything is as expected, and otherwise replaces itself with `node bin/ratchet.js` (the
 * JS client, which starts a daemon when none runs, and the in-process CLI behind it).
 *
 *   - served commands: the list below (pinned against SERVED_COMMANDS by src/daemon/native.test.ts),
 *     no --db, no -h/--help; RATCHET_NO_DAEMON=1, RATCHET_DB, ORCH_DB: in-process;
 *   - the workspace: the first `.ratchet/` folder walking up from the working folder; with a
 *     config.json (it may name PostgreSQL) the JS client decides;
 *   - trust: the folder is owned by our uid and not group/other-writable; the socket is a socket
 *     owned by our uid; anything else is never connected to (nor removed);
 *   - build: the daemon's hello must carry the build id of dist/bundle/daemon.cjs next to this
 *     binary (device:inode:size:mtime in ns, as src/daemon/files.ts computes it);
 *   - the request is sent only after the hello: before it, nothing can have run, so any failure
 *     falls back (stdin already read is handed to Node through a memfd). After it, a lost
 *     connection is reported (exit 1, code daemon_lost), never retried: the op may have committed.
 *
 * Linux only (memfd_create, /proc/self/exe); built by scripts/build-native.mjs when a C compiler
 * is there. Without it bin/ratchet runs `node bin/ratchet.js` directly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

#define PROTOCOL_VERSION 1
#define MAX_SOCKET_PATH 100
#define MAX_STDIN (64u * 1024u * 1024u)

/* BEGIN SERVED_COMMANDS (src/daemon/protocol.ts) */
static const char *const SERVED[] = {
    "plan publish",   "step start",      "step complete", "step fail",         "step log",
    "step deviate",   "plan record-skill", "metric record", "plan raise-budget", "plan abandon",
    "plan finish",    "plan review-close", "step heartbeat", "plan sweep",       "reason fill",
    "headline respond", "note add",      "reference add", "reference mark",    NULL};
/* END SERVED_COMMANDS */

static char g_root[PATH_MAX]; /* the package root: <root>/dist/native/ratchet-client */
static int g_argc;
static char **g_argv;

/* ── a growable byte buffer ─────────────────────────────────────────────────────────────── */
typedef struct {
  char *p;
  size_t n, cap;
} buf_t;

static void put(buf_t *b, const void *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (b->n + n + 1 > cap) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      fputs("ratchet: out of memory\n", stderr);
      exit(1);
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void puts_(buf_t *b, const char *s) { put(b, s, strlen(s)); }

static void put_json_string(buf_t *b, const char *s) {
  static const char hex[] = "0123456789abcdef";
  put(b, "\"", 1);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') {
      char e[2] = {'\\', (char)*c};
      put(b, e, 2);
    } else if (*c < 0x20) {
      char e[6] = {'\\', 'u', '0', '0', hex[*c >> 4], hex[*c & 15]};
      put(b, e, 6);
    } else {
      put(b, c, 1);
    }
  }
  put(b, "\"", 1);
}

static void put_base64(buf_t *b, const unsigned char *s, size_t n) {
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);
    char o[4] = {t[v >> 18 & 63], t[v >> 12 & 63], i + 1 < n ? t[v >> 6 & 63] : '=', i + 2 < n ? t[v & 63] : '='};
    put(b, o, 4);
  }
}

/* ── falling back to Node ───────────────────────────────────────────────────────────────── */
static void fallback(const buf_t *stdin_bytes, int refused) {
  /* A daemon that refused will refuse again: Node runs the command in-process at once. */
  if (refused) setenv("RATCHET_NO_DAEMON", "1", 1);
  if (stdin_bytes) {
    int fd = memfd_create("ratchet-stdin", 0);
    size_t off = 0;
    while (fd >= 0 && off < stdin_bytes->n) {
      ssize_t w = write(fd, stdin_bytes->p + off, stdin_bytes->n - off);
      if (w <= 0) break;
      off += (size_t)w;
    }
    if (fd < 0 || off != stdin_bytes->n || lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) < 0) {
      fputs("ratchet: cannot hand standard input over to node\n", stderr);
      exit(1);
    }
    close(fd);
  }
  char js[PATH_MAX + 32];
  snprintf(js, sizeof js, "%s/bin/ratchet.js", g_root);
  char **args = calloc((size_t)g_argc + 2, sizeof *args);
  if (!args) exit(1);
  args[0] = "node";
  args[1] = js;
  for (int i = 1; i < g_argc; i++) args[i + 1] = g_argv[i];
  execvp("node", args);
  fprintf(stderr, "ratchet: cannot run node: %s\n", strerror(errno));
  exit(1);
}

/* ── checks ─────────────────────────────────────────────────────────────────────────────── */
static int served(int argc, char **argv) {
  if (argc < 3) return 0;
  char cmd[64];
  if (snprintf(cmd, sizeof cmd, "%s %s", argv[1], argv[2]) >= (int)sizeof cmd) return 0;
  int found = 0;
  for (const char *const *s = SERVED; *s; s++)
    if (strcmp(*s, cmd) == 0) found = 1;
  if (!found) return 0;
  for (int i = 3; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") || !strcmp(argv[i], "--db") ||
        !strncmp(argv[i], "--db=", 5))
      return 0;
  return !(strcmp(argv[1], "headline") == 0 && argc != 4);
}

static int reads_stdin(int argc, char **argv) {
  for (int i = 3; i < argc; i++)
    if (strcmp(argv[i], "-") == 0) return 1;
  return 0;
}

static int set(const char *name) {
  const char *v = getenv(name);
  return v && *v;
}

/* The `.ratchet` folder above `cwd`, into `out`; 0 when there is none. */
static int find_workspace(const char *cwd, char *out, size_t size) {
  char cur[PATH_MAX];
  snprintf(cur, sizeof cur, "%s", cwd);
  for (;;) {
    struct stat st;
    if (snprintf(out, size, "%s/.ratchet", strcmp(cur, "/") ? cur : "") < (int)size && stat(out, &st) == 0 &&
        S_ISDIR(st.st_mode))
      return 1;
    char *slash = strrchr(cur, '/');
    if (!slash || slash == cur) {
      if (strcmp(cur, "/") == 0) return 0;
      strcpy(cur, "/");
      continue;
    }
    *slash = 0;
  }
}

/* ── main ───────────────────────────────────────────────────────────────────────────────── */
static int read_line(int fd, buf_t *b, size_t *scan) {
  for (;;) {
    char *nl = b->n > *scan ? memchr(b->p + *scan, '\n', b->n - *scan) : NULL;
    if (nl) return (int)(nl - b->p);
    *scan = b->n;
    char chunk[65536];
    ssize_t r = read(fd, chunk, sizeof chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    put(b, chunk, (size_t)r);
  }
}

/* Decodes the JSON string starting at `*s` (just past its opening quote) into `out`. */
static int json_string(const char **s, buf_t *out) {
  const char *c = *s;
  while (*c && *c != '"') {
    if (*c != '\\') {
      put(out, c++, 1);
      continue;
    }
    c++;
    char ch;
    switch (*c) {
    case 'n': ch = '\n'; break;
    case 't': ch = '\t'; break;
    case 'r': ch = '\r'; break;
    case 'b': ch = '\b'; break;
    case 'f': ch = '\f'; break;
    case 'u': {
      unsigned cp = 0;
      if (sscanf(c + 1, "%4x", &cp) != 1) return 0;
      c += 5;
      if (cp >= 0xd800 && cp < 0xdc00 && c[0] == '\\' && c[1] == 'u') {
        unsigned lo = 0;
        if (sscanf(c + 2, "%4x", &lo) == 1 && lo >= 0xdc00 && lo < 0xe000) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          c += 6;
        }
      }
      char u[4];
      size_t n;
      if (cp < 0x80) u[0] = (char)cp, n = 1;
      else if (cp < 0x800) u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 63)), n = 2;
      else if (cp < 0x10000)
        u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 63)), u[2] = (char)(0x80 | (cp & 63)), n = 3;
      else
        u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 63)), u[2] = (char)(0x80 | (cp >> 6 & 63)),
        u[3] = (char)(0x80 | (cp & 63)), n = 4;
      put(out, u, n);
      continue;
    }
    default: ch = *c; break; /* \" \\ \/ */
    }
    if (!*c) return 0;
    put(out, &ch, 1);
    c++;
  }
  if (*c != '"') return 0;
  *s = c + 1;
  return 1;
}

/* The string value of `"key":"…"` in `json`, decoded into `out`. */
static int json_field(const char *json, const char *key, buf_t *out) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":\"", key);
  const char *at = strstr(json, pat);
  if (!at) return 0;
  at += strlen(pat);
  return json_string(&at, out);
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return errno ? errno : EIO;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void lost(void) {
  fprintf(stderr,
          "❌ ratchet: %s %s: the daemon ended before answering; the op may or may not have been applied (check "
          "with `ratchet plan show` or `ratchet events` before retrying)\n",
          g_argv[1], g_argv[2]);
  printf("{\"ok\":false,\"op\":\"%s %s\",\"code\":\"daemon_lost\",\"exit_status\":1,\"ambiguous\":true}\n", g_argv[1],
         g_argv[2]);
  exit(1);
}

int main(int argc, char **argv) {
  g_argc = argc;
  g_argv = argv;
  signal(SIGPIPE, SIG_IGN);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    fputs("ratchet: cannot find its own installation (/proc/self/exe)\n", stderr);
    return 1;
  }
  exe[n] = 0;
  /* <root>/dist/native/ratchet-client → <root> */
  for (int up = 0; up < 3; up++) {
    char *slash = strrchr(exe, '/');
    if (!slash) return 1;
    *slash = 0;
  }
  snprintf(g_root, sizeof g_root, "%s", exe);

  const char *off = getenv("RATCHET_NO_DAEMON");
  if ((off && strcmp(off, "1") == 0) || set("RATCHET_DB") || set("ORCH_DB") || !served(argc, argv)) fallback(NULL, 0);
  char cwd[PATH_MAX], ws[PATH_MAX], path[PATH_MAX + 32];
  if (!getcwd(cwd, sizeof cwd) || !find_workspace(cwd, ws, sizeof ws)) fallback(NULL, 0);
  struct stat st;
  uid_t uid = getuid();
  snprintf(path, sizeof path, "%s/config.json", ws);
  if (stat(path, &st) == 0) fallback(NULL, 0);
  if (stat(ws, &st) != 0 || st.st_uid != uid || (st.st_mode & 022)) fallback(NULL, 0);
  snprintf(path, sizeof path, "%s/dist/bundle/daemon.cjs", g_root);
  if (stat(path, &st) != 0) fallback(NULL, 0);
  char build[128];
  snprintf(build, sizeof build, "%llu:%llu:%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
           (unsigned long long)st.st_size,
           (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (snprintf(addr.sun_path, sizeof addr.sun_path, "%s/daemon.sock", ws) > MAX_SOCKET_PATH) fallback(NULL, 0);
  if (lstat(addr.sun_path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != uid) fallback(NULL, 0);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) fallback(NULL, 0);

  /* 1. the hello */
  buf_t in = {0};
  size_t scan = 0;
  int nl = read_line(fd, &in, &scan);
  if (nl < 0) fallback(NULL, 0);
  in.p[nl] = 0;
  buf_t hello_build = {0};
  char version[32];
  snprintf(version, sizeof version, "{\"ratchet_daemon\":%d,", PROTOCOL_VERSION);
  if (strncmp(in.p, version, strlen(version)) != 0 || !json_field(in.p, "build", &hello_build) ||
      strcmp(hello_build.p ? hello_build.p : "", build) != 0)
    fallback(NULL, 0);
  /* the daemon's key (written before it listened; a process that cannot read .ratchet/ has none) */
  char key[160];
  {
    char kpath[PATH_MAX + 32];
    if (snprintf(kpath, sizeof kpath, "%s/daemon.key", ws) >= (int)sizeof kpath) fallback(NULL, 0);
    int kfd = open(kpath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (kfd < 0) fallback(NULL, 0);
    ssize_t kn = read(kfd, key, sizeof key - 1);
    close(kfd);
    if (kn <= 0) fallback(NULL, 0);
    key[kn] = 0;
    while (kn > 0 && (key[kn - 1] == '\n' || key[kn - 1] == '\r')) key[--kn] = 0;
    for (ssize_t i = 0; i < kn; i++)
      if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f'))) fallback(NULL, 0);
  }

  /* 2. the request */
  buf_t input = {0}, *stdin_bytes = NULL;
  if (reads_stdin(argc, argv)) {
    char chunk[65536];
    for (;;) {
      ssize_t r = read(0, chunk, sizeof chunk);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fallback(NULL, 0); /* Node reads it again and reports the error in its words */
      if (r == 0) break;
      put(&input, chunk, (size_t)r);
      if (input.n > MAX_STDIN) break; /* the daemon refuses it as the CLI would */
    }
    stdin_bytes = &input;
  }
  buf_t req = {0};
  puts_(&req, "{\"build\":");
  put_json_string(&req, build);
  puts_(&req, ",\"key\":");
  put_json_string(&req, key);
  puts_(&req, ",\"args\":[");
  for (int i = 1; i < argc; i++) {
    if (i > 1) put(&req, ",", 1);
    put_json_string(&req, argv[i]);
  }
  puts_(&req, "],\"cwd\":");
  put_json_string(&req, cwd);
  puts_(&req, ",\"env\":{");
  int first = 1;
  for (char **e = environ; *e; e++) {
    char *eq = strchr(*e, '=');
    if (!eq || eq == *e) continue;
    if (!first) put(&req, ",", 1);
    first = 0;
    *eq = 0;
    put_json_string(&req, *e);
    *eq = '=';
    put(&req, ":", 1);
    put_json_string(&req, eq + 1);
  }
  char tail[96];
  snprintf(tail, sizeof tail, "},\"pid\":%d,\"stdinIsTTY\":%s", (int)getpid(), isatty(0) ? "true" : "false");
  puts_(&req, tail);
  if (stdin_bytes) {
    puts_(&req, ",\"stdin\":\"");
    put_base64(&req, (const unsigned char *)(input.p ? input.p : ""), input.n);
    put(&req, "\"", 1);
  }
  puts_(&req, "}\n");
  if (write_all(fd, req.p, req.n) != 0) lost();

  /* 3. the reply (or a refusal: nothing ran) */
  size_t start = (size_t)nl + 1;
  scan = start;
  nl = read_line(fd, &in, &scan);
  if (nl < 0) lost();
  in.p[nl] = 0;
  const char *reply = in.p + start;
  if (strncmp(reply, "{\"refused\":", 11) == 0) fallback(stdin_bytes, 1);
  int status;
  buf_t out = {0}, err = {0};
  if (sscanf(reply, "{\"status\":%d,", &status) != 1 || !json_field(reply, "stdout", &out) ||
      !json_field(reply, "stderr", &err))
    lost();
  close(fd);
  if (err.n) write_all(2, err.p, err.n);
  int e = out.n ? write_all(1, out.p, out.n) : 0;
  if (e && e != EPIPE) {
    fprintf(stderr, "ratchet: cannot write to standard output (%s); the command itself finished with status %d\n",
            strerror(e), status);
    if (status == 0) status = 1;
  }
  return status;
}
