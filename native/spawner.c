/*
 * ratchet-spawner: starts processes for the Node process that started it, so that a start costs
 * the same whatever Node's size (libuv forks Node itself: the page-table copy grows with its RSS).
 *
 *   ratchet-spawner SOCKET
 *
 * The control channel is fd 0 (requests in) and fd 1 (replies out), the pipes Node gave it; fd 2
 * is /dev/null. SOCKET is the Unix stream socket Node listens on for the children's stdio.
 *
 * Request (little-endian): u32 len (bytes after this field), u32 id, u8 nonce[16], u8 flags
 * (bit 0: the child gets a stdin stream; otherwise /dev/null), u32 argc, u32 envc, then
 * NUL-terminated strings: file, cwd ("" = ours), argc arguments (argv[0] included), envc
 * "KEY=VALUE" entries. Replies are 16 bytes: u32 id, u8 kind, 3 bytes 0, i32 a, i32 b:
 *   kind 0 hello    (id 0, a = protocol version): sent once at start
 *   kind 1 started  a = pid
 *   kind 2 failed   a = errno (nothing runs)
 *   kind 3 exited   a = exit code or -1, b = signal number or 0 (from waitpid)
 *   kind 4 no streams  a = errno: SOCKET could not be reached, nothing runs (Node starts it itself)
 *
 * Per request: one connection to SOCKET per stream (stdin when asked, stdout, stderr), each
 * opened by writing the request's nonce and the stream number (0, 1, 2) so Node can tell it from
 * a forged one; then vfork, and in the child: a new session (setsid), the connections on fds 0/1/2
 * (/dev/null for stdin when there is none), every other fd closed, every signal disposition back
 * to default and an empty signal mask, the cwd, then execve with exactly the request's
 * environment; a bare name is looked up in that environment's PATH the way libuv does (EACCES
 * remembered, ENOENT/ENOTDIR skipped, the system default path when PATH is unset). A failure in
 * the child is reported through memory it shares with us until it execs (vfork) as `failed`.
 * The child holds the only copies of its connections: no relay, no copy, EOF when it and its
 * descendants close them.
 *
 * It runs nothing but what a request says. It exits when fd 0 reaches EOF (Node is gone or done
 * with it), sending SIGTERM to the group of every child still running first (Node's exit hook
 * SIGKILLs the runs it knows of; this covers a request Node sent just before it exited); when
 * Node dies (PR_SET_PDEATHSIG) it does the same and also removes SOCKET and its folder. It is not
 * dumpable (no /proc/<pid>/fd or mem for processes without CAP_SYS_PTRACE). Diagnostics go
 * nowhere: a reply is the only output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROTOCOL_VERSION 1
#define NONCE_BYTES 16
#define HEADER_BYTES 29 /* id + nonce + flags + argc + envc */
#define MAX_REQUEST (64u << 20)
#define MAX_CHILDREN 4096
#define DEFAULT_PATH "/usr/local/bin:/bin:/usr/bin"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

enum { REPLY_HELLO = 0, REPLY_STARTED = 1, REPLY_FAILED = 2, REPLY_EXITED = 3, REPLY_NO_STREAMS = 4 };

static struct sockaddr_un addr;
static char sock_dir[sizeof addr.sun_path];
static int dev_null = -1;
static sigset_t blocked;

/* Children still running: pid → request id (a linear scan: a few dozen at most in practice). */
static struct {
  pid_t pid;
  uint32_t id;
} children[MAX_CHILDREN];
static int nchildren;

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
  p[2] = (v >> 16) & 0xff;
  p[3] = (v >> 24) & 0xff;
}

static int write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* A reply Node cannot read means Node is gone: nothing is left to do. */
static void reply(uint32_t id, int kind, int32_t a, int32_t b) {
  unsigned char r[16] = {0};
  put_u32(r, id);
  r[4] = (unsigned char)kind;
  put_u32(r + 8, (uint32_t)a);
  put_u32(r + 12, (uint32_t)b);
  if (write_all(1, r, sizeof r) != 0) _exit(0);
}

/* One stdio connection to Node's socket, announced with the nonce and the stream number. */
static int connect_stream(const unsigned char *nonce, int stream) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  int r;
  do r = connect(s, (struct sockaddr *)&addr, sizeof addr);
  while (r != 0 && errno == EINTR);
  unsigned char hello[NONCE_BYTES + 1];
  memcpy(hello, nonce, NONCE_BYTES);
  hello[NONCE_BYTES] = (unsigned char)stream;
  if (r != 0 || write_all(s, hello, sizeof hello) != 0) {
    int err = errno;
    close(s);
    return -err;
  }
  return s;
}

/* Shared with the vfork child until it execs: the errno of its failure. Static, not on the stack. */
static volatile int child_errno;

static const char *path_of(char *const *envp) {
  for (char *const *e = envp; *e; e++)
    if (strncmp(*e, "PATH=", 5) == 0) return *e + 5;
  return NULL;
}

/* execvp's search, with the request's PATH (libuv's uv__execvpe). Returns only on failure. */
static void exec_in_path(const char *file, char *const *argv, char *const *envp) {
  if (strchr(file, '/')) {
    execve(file, argv, envp);
    return;
  }
  const char *path = path_of(envp);
  if (!path) path = DEFAULT_PATH;
  size_t flen = strlen(file);
  char buf[4096];
  int eacces = 0;
  const char *p = path;
  for (;;) {
    const char *end = strchrnul(p, ':');
    size_t dlen = (size_t)(end - p);
    if (dlen + 1 + flen + 1 <= sizeof buf) {
      size_t at = 0;
      if (dlen == 0) buf[at++] = '.'; /* an empty entry is the working directory */
      else {
        memcpy(buf, p, dlen);
        at = dlen;
      }
      buf[at++] = '/';
      memcpy(buf + at, file, flen + 1);
      execve(buf, argv, envp);
      switch (errno) {
      case EACCES:
        eacces = 1;
        break;
      case ENOENT:
      case ENOTDIR:
      case ESTALE:
      case ENODEV:
      case ETIMEDOUT:
        break;
      default:
        return;
      }
    }
    if (*end == '\0') break;
    p = end + 1;
  }
  errno = eacces ? EACCES : ENOENT;
}

static void close_from_3(void) {
  if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
  struct rlimit rl;
  long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 65536;
  for (long fd = 3; fd < max; fd++) close((int)fd);
}

/* The vfork child: never returns (exec or _exit); writes nothing but child_errno. */
static void __attribute__((noreturn)) child_main(int fd0, int fd1, int fd2, const char *file, const char *cwd,
                                                 char *const *argv, char *const *envp) {
  if (setsid() < 0) goto fail;
  if (dup2(fd0, 0) < 0 || dup2(fd1, 1) < 0 || dup2(fd2, 2) < 0) goto fail;
  close_from_3();
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, NULL);
  if (*cwd && chdir(cwd) != 0) goto fail;
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  exec_in_path(file, argv, envp);
fail:
  child_errno = errno ? errno : EINVAL;
  _exit(127);
}

static void remember(pid_t pid, uint32_t id) {
  children[nchildren].pid = pid;
  children[nchildren].id = id;
  nchildren++;
}

static int forget(pid_t pid, uint32_t *id) {
  for (int i = 0; i < nchildren; i++)
    if (children[i].pid == pid) {
      *id = children[i].id;
      children[i] = children[--nchildren];
      return 1;
    }
  return 0;
}

/* Parses one request (`body`, `len` bytes after the length field) and starts it. */
static void start(unsigned char *body, uint32_t len) {
  if (len < HEADER_BYTES) _exit(2); /* Node never sends this: the channel is not ours */
  uint32_t id = get_u32(body);
  const unsigned char *nonce = body + 4;
  int with_stdin = body[20] & 1;
  uint32_t argc = get_u32(body + 21), envc = get_u32(body + 25);
  uint32_t nstr = 2 + argc + envc;
  if (argc == 0 || argc > len || envc > len) _exit(2);
  char **strs = malloc(sizeof(char *) * ((size_t)nstr + 2));
  if (!strs) {
    reply(id, REPLY_FAILED, ENOMEM, 0);
    return;
  }
  /* The strings, each NUL-terminated; the argv and env arrays get their NULL ends. */
  char *p = (char *)body + HEADER_BYTES, *end = (char *)body + len;
  uint32_t k = 0;
  for (uint32_t i = 0; i < nstr; i++) {
    char *z = memchr(p, '\0', (size_t)(end - p));
    if (!z) _exit(2);
    strs[k++] = p;
    if (i == 1 + argc) strs[k++] = NULL; /* after the last argument */
    p = z + 1;
  }
  strs[k] = NULL;
  const char *file = strs[0], *cwd = strs[1];
  char **argv = strs + 2, **envp = strs + 3 + argc;

  int fds[3] = {-1, -1, -1};
  /* Every child's exit must be reported: no start without room to remember it. */
  int err = nchildren < MAX_CHILDREN ? 0 : EAGAIN;
  int no_streams = 0;
  if (!err) {
    fds[0] = with_stdin ? connect_stream(nonce, 0) : dev_null;
    if (fds[0] < 0) err = -fds[0];
  }
  for (int s = 1; s <= 2 && !err; s++) {
    fds[s] = connect_stream(nonce, s);
    if (fds[s] < 0) err = -fds[s];
  }
  if (err && err != EAGAIN) no_streams = 1; /* the error is ours, not the command's */
  pid_t pid = -1;
  if (!err) {
    child_errno = 0;
    pid = vfork();
    if (pid == 0) child_main(fds[0], fds[1], fds[2], file, cwd, argv, envp);
    if (pid < 0) err = errno;
    else if (child_errno) {
      err = child_errno;
      while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
      }
    }
  }
  for (int s = 0; s < 3; s++)
    if (fds[s] >= 0 && fds[s] != dev_null) close(fds[s]);
  free(strs);
  if (err) {
    reply(id, no_streams ? REPLY_NO_STREAMS : REPLY_FAILED, err, 0);
    return;
  }
  remember(pid, id);
  reply(id, REPLY_STARTED, pid, 0);
}

static void reap(void) {
  int st;
  pid_t pid;
  while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
    uint32_t id;
    if (!forget(pid, &id)) continue;
    if (WIFSIGNALED(st)) reply(id, REPLY_EXITED, -1, WTERMSIG(st));
    else reply(id, REPLY_EXITED, WEXITSTATUS(st), 0);
  }
}

static void remove_socket(void) {
  unlink(addr.sun_path);
  rmdir(sock_dir);
}

/*
 * Node is gone or done: nobody supervises what still runs. Node's exit hook SIGKILLs the group of
 * every run it knows; this covers the runs it sent but had not heard of yet. SIGTERM, not SIGKILL:
 * a `ratchet-confine` among them must live to kill its own descendants (also those that left the
 * group), which it does on SIGTERM and, at once, on our exit (its parent-death signal).
 */
static void __attribute__((noreturn)) quit(void) {
  for (int i = 0; i < nchildren; i++)
    if (kill(-children[i].pid, SIGTERM) != 0) kill(children[i].pid, SIGTERM);
  _exit(0);
}

int main(int argc, char **argv) {
  if (argc != 2 || strlen(argv[1]) >= sizeof addr.sun_path) return 2;
  pid_t parent = getppid();
  addr.sun_family = AF_UNIX;
  strcpy(addr.sun_path, argv[1]);
  strcpy(sock_dir, argv[1]);
  strcpy(sock_dir, dirname(sock_dir));

  /* SIGCHLD (children), SIGUSR1 (our parent's death) are taken from a signalfd. */
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGCHLD);
  sigaddset(&blocked, SIGUSR1);
  sigprocmask(SIG_BLOCK, &blocked, NULL);
  signal(SIGCHLD, SIG_DFL); /* an inherited SIG_IGN would reap children before we see them */
  signal(SIGPIPE, SIG_IGN); /* a write to a gone Node fails with EPIPE instead */
  if (prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0) != 0 || getppid() != parent) return 2;
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  int sfd = signalfd(-1, &blocked, SFD_CLOEXEC | SFD_NONBLOCK);
  dev_null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (sfd < 0 || dev_null < 0) return 2;
  /* Our own fds 0 and 1 are the control channel: no child may inherit them (close-on-exec). */
  fcntl(0, F_SETFD, FD_CLOEXEC);
  fcntl(1, F_SETFD, FD_CLOEXEC);
  reply(0, REPLY_HELLO, PROTOCOL_VERSION, 0);

  size_t cap = 1 << 16, have = 0;
  unsigned char *buf = malloc(cap);
  if (!buf) return 2;
  struct pollfd pfd[2] = {{.fd = 0, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
  for (;;) {
    if (poll(pfd, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 2;
    }
    if (pfd[1].revents) {
      struct signalfd_siginfo si;
      int parent_died = 0;
      while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
        if (si.ssi_signo == SIGUSR1) parent_died = 1;
      if (parent_died) {
        remove_socket();
        quit();
      }
      reap();
    }
    if (pfd[0].revents) {
      if (have == cap) {
        unsigned char *nb = realloc(buf, cap * 2);
        if (!nb) return 2;
        buf = nb;
        cap *= 2;
      }
      ssize_t n = read(0, buf + have, cap - have);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) quit(); /* Node closed the channel */
      have += (size_t)n;
      size_t at = 0;
      while (have - at >= 4) {
        uint32_t len = get_u32(buf + at);
        if (len > MAX_REQUEST) _exit(2);
        if (have - at - 4 < len) {
          /* Make room for the rest of a large request. */
          while (cap < (size_t)len + 4) {
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) return 2;
            buf = nb;
            cap *= 2;
          }
          break;
        }
        start(buf + at + 4, len);
        at += 4 + (size_t)len;
        /* Exits of fast children are reported as soon as we get to them. */
        reap();
      }
      memmove(buf, buf + at, have - at);
      have -= at;
    }
  }
}
