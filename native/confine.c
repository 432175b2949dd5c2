/*
 * ratchet-confine: runs one command confined (reads, writes, metadata, /proc, signals) and
 * supervised (time limit, nothing it started outlives it, folders removed afterwards).
 *
 *   ratchet-confine [--read PATH]... [--write DIR]... [--write-file FILE]... [--proc-self]
 *                   [--supervise-only] [--timeout-ms N] [--kill-grace-ms M] [--cleanup DIR]...
 *                   -- PROGRAM [ARG]...
 *   ratchet-confine [same flags] --probe
 *
 * What the command may do (all confined modes, that is without --supervise-only):
 *   - Write: create, change, rename or delete files only under the --write folders, and write to
 *     the --write-file files (e.g. /dev/null). (Landlock write rights.)
 *   - Read: with at least one --read, open for reading or execute only beneath a --read or
 *     --write root. A --read that does not exist is skipped (the caller's default set names
 *     /lib32 and friends that some systems lack). Without any --read everything stays readable
 *     except other processes' /proc entries (below). (Landlock read rights.)
 *   - /proc: never read /proc/<pid>/... (environ, cmdline, mem, maps, fd, ...) of a process outside
 *     the sandbox. With --proc-self the program reads its own /proc/<pid> (so /proc/self works for
 *     it); the processes it starts cannot read theirs. Anything else under /proc only by --read
 *     (e.g. --read /proc/cpuinfo). Without any --read, / is readable entry by entry (everything but
 *     /proc; / itself cannot be listed) and so is /proc except the numbered process folders, plus
 *     the program's own. (Landlock read rules: no /proc/<pid> folder gets a rule but the program's.)
 *     A --read or --write of /, /proc or another process's /proc/<pid> is refused (exit 125).
 *     Why not a pid namespace with a fresh /proc (every descendant would see its own /proc/self)?
 *     It costs about the same (measured 0.1 ms more), but pids seen inside would no longer be the
 *     caller's, signals to outside pids would fail with ESRCH instead of EPERM, and the command
 *     would need an init process in front of it to get SIGTERM; what breaks without it is small:
 *     Python needs no /proc (subprocess closes descriptors with close_range), Node starts without
 *     it; only process.memoryUsage() and similar in a *child* Node fail (EACCES).
 *   - Metadata: chmod, chown, utime(s)/utimensat/futimesat and set/removexattr, path- and fd-based,
 *     fail with EROFS outside the write roots and work inside them. (A private mount namespace in
 *     which / is recursively read-only and each write root is a fresh writable bind mount; as root
 *     directly, otherwise inside an unprivileged user namespace.) Where neither is permitted a
 *     seccomp filter refuses every metadata call with EPERM, inside the write roots too, and
 *     --probe says `feature metadata no`. With the namespace a write outside the write roots also
 *     fails with EROFS ("Read-only file system") rather than Landlock's EACCES.
 *   - Signals: cannot signal processes outside its sandbox (Landlock ABI 6 signal scope). On older
 *     kernels it can signal anything its uid may; --probe says `feature signals no` (callers that
 *     need it there must use a pid namespace, e.g. bubblewrap).
 *   - /dev/shm: with the mount namespace, a private empty tmpfs (64 MB) it may write (POSIX
 *     semaphores: Python's multiprocessing); without it, /dev/shm is not writable.
 *   - It cannot leave its process group (setsid/setpgid fail with EPERM), change mounts (mount,
 *     umount, mount_setattr, open_tree, move_mount, fs* fail with EPERM), and a root caller keeps
 *     only Docker's default capabilities minus CAP_MKNOD and CAP_NET_RAW (no CAP_SYS_ADMIN,
 *     CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, ...), so it cannot undo the read-only mounts, open files
 *     by handle, make device nodes or sniff loopback traffic.
 *
 * --supervise-only skips every confinement above; only the supervision below applies (trusted user
 * commands, `step run`).
 *
 * Supervision (all modes). The supervisor stays outside the sandbox; it is a child subreaper, so
 * everything the command starts (also after setsid or a double fork) stays its descendant.
 *   - When the command exits, every remaining descendant is SIGKILLed and reaped before the
 *     supervisor exits: once ratchet-confine has exited, nothing it started still runs.
 *   - --timeout-ms N: N ms after the start every descendant gets SIGTERM, --kill-grace-ms M later
 *     (default 2000) SIGKILL; exit 124 with "ratchet-confine: timed out after N ms".
 *   - SIGTERM, SIGINT or SIGHUP to the supervisor (or its process group, which the command shares):
 *     forwarded to every descendant, SIGKILL --kill-grace-ms later.
 *   - The parent dies (even by SIGKILL): everything is killed at once (PR_SET_PDEATHSIG).
 *   - --cleanup DIR: removed recursively after everything is gone, in every case above.
 *
 * Read set (measured with strace and by running them confined; Debian 12, Python 3.11, Node 20,
 * bash 5.2, git 2.39): --read /usr /lib /lib64 /bin /sbin (links into /usr here: a rule lands on
 * the link's target) /etc/ld.so.cache /etc/localtime /etc/passwd /etc/group /etc/nsswitch.conf
 * /dev/null /dev/urandom /dev/zero, plus the interpreter's real prefix when it is not under /usr
 * (Python's sys.base_prefix: a pyenv shim is a script that runs another interpreter; Node's
 * dirname(dirname(process.execPath))), plus the script's folder and its inputs.
 *   - Node also needs /etc/ssl: it refuses to start without /etc/ssl/openssl.cnf ("OpenSSL
 *     configuration error"). To size its heap as it does unconfined it reads /proc/self/maps,
 *     /proc/self/cgroup, /proc/meminfo and /sys/fs/cgroup: give --proc-self --read /proc/meminfo
 *     --read /sys/fs/cgroup (it starts without them).
 *   - Python reads nothing under /proc; its ssl module needs /etc/ssl.
 *   - git exits 128 ("unknown error occurred while reading the configuration files") when
 *     /etc/gitconfig or ~/.gitconfig exists but cannot be read: run it with GIT_CONFIG_NOSYSTEM=1
 *     and GIT_CONFIG_GLOBAL=/dev/null (or read roots for them). A linked worktree also needs the
 *     source's .git folder readable (objects) and its .git/worktrees/<name> writable.
 *   - Not /etc as a whole: it holds /etc/shadow and the ssh host keys, readable to a root caller.
 *
 * Cost (median of 300 starts of /bin/true, posix_spawn, a loaded 2-core VM): bare 0.55 ms; v1 flags
 * under the v1 launcher 1.03 ms; the recommended read set + --proc-self + write roots 1.40 ms
 * (mount namespace included; 1.3 ms without it); v1 flags under this launcher 1.7 ms (the
 * read-everything-but-/proc rules cost ~0.3 ms: pass --read); --supervise-only 1.0 ms.
 *
 * Exit status: PROGRAM's own, or 128+N when a signal N ended it (the supervisor re-raises the
 * signal, so a caller sees the signal itself); 124 after --timeout-ms. Failures of ratchet-confine
 * itself print one line starting with "ratchet-confine: " on stderr and exit 125 (setup) or 127
 * (PROGRAM not runnable).
 *
 * --probe sets the whole sandbox up in a child, runs nothing, and prints "landlock abi N" and one
 * "feature NAME yes|no" line for reads, metadata, signals and proc. Exit 0 when the sandbox can be
 * set up on this kernel, 125 with the reason otherwise.
 *
 * Not covered: connecting to a pathname Unix socket outside (Landlock has no right for it);
 * descriptors the caller passes in (stdin/stdout, inherited fds) work as opened, metadata calls on
 * them included; a descendant's own /proc/self (see /proc above); descendants that left the process
 * group (only possible with --supervise-only) when the supervisor itself is SIGKILLed (the caller
 * should SIGTERM first: the supervisor then kills everything before it exits).
 *
 * RATCHET_CONFINE_NO_NAMESPACES=1 skips the mount namespace as if it were not permitted (tests of
 * the fallback): the sandbox then gets exactly what a machine without namespaces gives it.
 *
 * Nothing here needs a header newer than the kernel's uapi basics: the Landlock, mount-API and
 * newer system-call constants are defined below so the program builds on older distributions and
 * detects the running kernel.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_TIMEOUT 124
#define EXIT_SETUP 125
#define EXIT_NOT_RUNNABLE 127
#define MAX_PATHS 256
#define DEFAULT_KILL_GRACE_MS 2000

/* Landlock syscalls share one number on every architecture. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1

#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14) /* ABI 3 */

#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */

#define LL_READ_RIGHTS (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)
/* The rights Landlock accepts on a rule for a single file (not a folder). */
#define LL_FILE_RIGHTS (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE)

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

/* The new mount API (Linux 5.12+ for mount_setattr); one number on every architecture. */
#define NR_open_tree 428
#define NR_move_mount 429
#define NR_fsopen 430
#define NR_fsconfig 431
#define NR_fsmount 432
#define NR_fspick 433
#define NR_mount_setattr 442
#define NR_pidfd_send_signal 424
#define NR_pidfd_open 434
#define NR_fchmodat2 452
#define NR_setxattrat 463
#define NR_removexattrat 466
#define M_OPEN_TREE_CLONE 1
#define M_MOVE_MOUNT_F_EMPTY_PATH 0x4
#define M_AT_RECURSIVE 0x8000
#define M_MOUNT_ATTR_RDONLY 0x1
#define M_MOUNT_ATTR_NOSUID 0x2
#define M_MOUNT_ATTR_NODEV 0x4
#define M_MS_PRIVATE (1 << 18)

struct m_mount_attr {
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};

#if defined(__x86_64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_RISCV64
#else
#error "ratchet-confine: add this architecture's AUDIT_ARCH constant"
#endif

/* ------------------------------------------------------------------------------------------------
 * Options
 */

struct options {
  const char *reads[MAX_PATHS], *dirs[MAX_PATHS], *files[MAX_PATHS], *cleanups[MAX_PATHS];
  int nreads, ndirs, nfiles, ncleanups;
  int probe, proc_self, supervise_only;
  long timeout_ms, kill_grace_ms;
  int cmd; /* index of PROGRAM in argv, -1 when absent */
};

static void fail(int code, const char *what, int err) {
  if (err)
    fprintf(stderr, "ratchet-confine: %s: %s\n", what, strerror(err));
  else
    fprintf(stderr, "ratchet-confine: %s\n", what);
  _exit(code);
}

static void failf(int code, int err, const char *fmt, const char *arg) {
  char what[4300];
  snprintf(what, sizeof what, fmt, arg);
  fail(code, what, err);
}

static void usage(void) {
  fail(EXIT_SETUP,
       "usage: ratchet-confine [--read PATH]... [--write DIR]... [--write-file FILE]... [--proc-self] "
       "[--supervise-only] [--timeout-ms N] [--kill-grace-ms M] [--cleanup DIR]... -- PROGRAM [ARG]...",
       0);
}

static long parse_ms(const char *flag, const char *s) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || !end || *end || end == s || v < 0 || v > 7L * 24 * 3600 * 1000)
    failf(EXIT_SETUP, 0, "%s needs a whole number of milliseconds", flag);
  return v;
}

static void add_path(const char **list, int *n, const char *flag, const char *path) {
  if (*n >= MAX_PATHS) failf(EXIT_SETUP, 0, "too many %s paths", flag);
  if (!*path) failf(EXIT_SETUP, 0, "%s needs a path", flag);
  list[(*n)++] = path;
}

static void parse_options(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->cmd = -1;
  o->timeout_ms = -1;
  o->kill_grace_ms = DEFAULT_KILL_GRACE_MS;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has_value = i + 1 < argc;
    if (strcmp(a, "--") == 0) {
      o->cmd = i + 1;
      break;
    } else if (strcmp(a, "--probe") == 0) {
      o->probe = 1;
    } else if (strcmp(a, "--proc-self") == 0) {
      o->proc_self = 1;
    } else if (strcmp(a, "--supervise-only") == 0) {
      o->supervise_only = 1;
    } else if (strcmp(a, "--read") == 0 && has_value) {
      add_path(o->reads, &o->nreads, a, argv[++i]);
    } else if (strcmp(a, "--write") == 0 && has_value) {
      add_path(o->dirs, &o->ndirs, a, argv[++i]);
    } else if (strcmp(a, "--write-file") == 0 && has_value) {
      add_path(o->files, &o->nfiles, a, argv[++i]);
    } else if (strcmp(a, "--cleanup") == 0 && has_value) {
      add_path(o->cleanups, &o->ncleanups, a, argv[++i]);
    } else if (strcmp(a, "--timeout-ms") == 0 && has_value) {
      o->timeout_ms = parse_ms(a, argv[++i]);
    } else if (strcmp(a, "--kill-grace-ms") == 0 && has_value) {
      o->kill_grace_ms = parse_ms(a, argv[++i]);
    } else {
      usage();
    }
  }
  if (!o->probe && (o->cmd < 0 || o->cmd >= argc)) usage();
}

/* ------------------------------------------------------------------------------------------------
 * Landlock: reads, writes, /proc and signals
 */

/* The write rights this kernel's Landlock knows: everything that creates, changes or removes. */
static uint64_t write_rights(int abi) {
  uint64_t r = LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR |
               LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
  if (abi >= 2) r |= LL_FS_REFER;
  if (abi >= 3) r |= LL_FS_TRUNCATE;
  return r;
}

/*
 * Adds a rule for `fd` (an O_PATH descriptor, closed here). A file gets only the file rights in
 * `allowed`; Landlock refuses folder rights on a file.
 */
static void add_fd_rule(int ruleset, int fd, uint64_t allowed, const char *path) {
  struct stat st;
  if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) allowed &= LL_FILE_RIGHTS;
  struct ll_path_beneath_attr attr = {.allowed_access = allowed, .parent_fd = fd};
  if (allowed && syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &attr, 0) != 0)
    failf(EXIT_SETUP, errno, "landlock_add_rule %s", path);
  close(fd);
}

/* A rule for `path`; a missing path is a setup failure unless `optional`. */
static void add_path_rule(int ruleset, const char *path, uint64_t allowed, const char *flag, int optional) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (optional && (errno == ENOENT || errno == ENOTDIR)) return;
    char what[4300];
    snprintf(what, sizeof what, "cannot open %s %s", flag, path);
    fail(EXIT_SETUP, what, errno);
  }
  add_fd_rule(ruleset, fd, allowed, path);
}

static int is_pid_name(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!isdigit((unsigned char)*s)) return 0;
  return 1;
}

/*
 * Without --read, reads stay unconfined except /proc/<pid>: Landlock cannot subtract, so every
 * entry of / but /proc gets a read rule, and so does every entry of /proc but the numbered process
 * folders and the self/thread-self links (which lead into one). The program's own /proc/<pid> is
 * added by the caller.
 */
static void read_everything_but_processes(int ruleset) {
  static const char *const tops[] = {"/", "/proc/"};
  for (int t = 0; t < 2; t++) {
    DIR *d = opendir(tops[t]);
    if (!d) failf(EXIT_SETUP, errno, "cannot list %s", tops[t]);
    struct dirent *e;
    while ((e = readdir(d))) {
      const char *n = e->d_name;
      if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0) continue;
      if (t == 0 && strcmp(n, "proc") == 0) continue;
      if (t == 1 && (is_pid_name(n) || strcmp(n, "self") == 0 || strcmp(n, "thread-self") == 0)) continue;
      /* O_PATH follows symlinks (/bin -> usr/bin), so the rule lands on what the link names. */
      int fd = openat(dirfd(d), n, O_PATH | O_CLOEXEC);
      if (fd < 0) continue; /* a dangling link or an entry that just went away */
      add_fd_rule(ruleset, fd, LL_READ_RIGHTS, n);
    }
    closedir(d);
  }
}

/*
 * A root that would hold another process's /proc/<pid> folder (/, /proc, /proc/<other pid>) is
 * refused: a rule on it would open every process's environment to the command.
 */
static void refuse_proc_exposure(const char *path, const char *flag) {
  char real[4096];
  if (!realpath(path, real)) return; /* missing: add_path_rule decides */
  int exposed = strcmp(real, "/") == 0 || strcmp(real, "/proc") == 0;
  if (!exposed && strncmp(real, "/proc/", 6) == 0) {
    char pid[32];
    size_t n = strcspn(real + 6, "/");
    if (n < sizeof pid) {
      memcpy(pid, real + 6, n);
      pid[n] = '\0';
      exposed = is_pid_name(pid) && atol(pid) != (long)getpid();
    }
  }
  if (exposed) {
    char what[4300];
    snprintf(what, sizeof what, "%s %s would expose other processes' /proc entries", flag, path);
    fail(EXIT_SETUP, what, 0);
  }
}

/* Builds the Landlock ruleset for `o` (not yet enforced). */
static int landlock_ruleset(const struct options *o, long abi, int private_shm) {
  struct ll_ruleset_attr attr = {0};
  /* Reads are always handled: even without --read, /proc/<pid> of other processes must be denied. */
  attr.handled_access_fs = write_rights((int)abi) | LL_READ_RIGHTS;
  if (abi >= 6) attr.scoped = LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET;
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) fail(EXIT_SETUP, "landlock_create_ruleset", errno);
  uint64_t all = attr.handled_access_fs;
  for (int i = 0; i < o->nreads; i++) refuse_proc_exposure(o->reads[i], "--read");
  for (int i = 0; i < o->ndirs; i++) refuse_proc_exposure(o->dirs[i], "--write");
  if (o->nreads == 0) read_everything_but_processes(ruleset);
  for (int i = 0; i < o->nreads; i++) add_path_rule(ruleset, o->reads[i], LL_READ_RIGHTS, "--read", 1);
  for (int i = 0; i < o->ndirs; i++) add_path_rule(ruleset, o->dirs[i], all, "--write folder", 0);
  for (int i = 0; i < o->nfiles; i++) add_path_rule(ruleset, o->files[i], all & LL_FILE_RIGHTS, "--write-file", 0);
  /*
   * The rule lands on this process's own /proc/<pid> folder (what /proc/self names now); after
   * exec the program keeps the pid, so /proc/self works for it and for nobody it starts.
   */
  if (o->proc_self || o->nreads == 0) add_path_rule(ruleset, "/proc/self", LL_READ_RIGHTS, "/proc/self", 0);
  if (private_shm) add_path_rule(ruleset, "/dev/shm", all, "/dev/shm", 1);
  return ruleset;
}

/* ------------------------------------------------------------------------------------------------
 * Metadata: a private mount namespace with everything read-only but the write roots
 */

static int write_file_once(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  int err = errno;
  close(fd);
  errno = err;
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/*
 * Enters a private mount namespace: as root directly, otherwise inside a new user namespace that
 * maps only our own uid and gid (files keep their owners, and the program gains nothing after exec:
 * its uid is not 0 there, so exec drops the namespace's capabilities). Returns 0, or -1 when
 * neither is permitted here (the caller falls back to seccomp).
 */
static int enter_mount_namespace(void) {
  const char *off = getenv("RATCHET_CONFINE_NO_NAMESPACES");
  if (off && *off && strcmp(off, "0") != 0) return -1;
  if (unshare(CLONE_NEWNS) == 0) return 0;
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return -1;
  char map[64];
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  if (write_file_once("/proc/self/uid_map", map) != 0) fail(EXIT_SETUP, "write uid_map", errno);
  if (write_file_once("/proc/self/setgroups", "deny") != 0 && errno != ENOENT)
    fail(EXIT_SETUP, "write setgroups", errno);
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  if (write_file_once("/proc/self/gid_map", map) != 0) fail(EXIT_SETUP, "write gid_map", errno);
  return 0;
}

/* Whether `path` is `root` or beneath it (both canonical). */
static int beneath(const char *path, const char *root) {
  size_t n = strlen(root);
  if (n == 1) return 1; /* "/" */
  return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * Binds `real` (canonical) over itself as a fresh writable mount. The clone takes the mounts below
 * it along (a user namespace may not clone a tree without them), but only its top becomes
 * writable: a mount below a write root stays read-only, which refuses more, never less.
 */
static void bind_writable(const char *real) {
  int tree = (int)syscall(NR_open_tree, AT_FDCWD, real, M_OPEN_TREE_CLONE | O_CLOEXEC | M_AT_RECURSIVE);
  if (tree < 0) failf(EXIT_SETUP, errno, "open_tree %s", real);
  /* nodev and nosuid: a device node or set-uid file made in a write root stays inert. */
  struct m_mount_attr rw = {.attr_set = M_MOUNT_ATTR_NOSUID | M_MOUNT_ATTR_NODEV, .attr_clr = M_MOUNT_ATTR_RDONLY};
  if (syscall(NR_mount_setattr, tree, "", AT_EMPTY_PATH, &rw, sizeof rw) != 0)
    failf(EXIT_SETUP, errno, "mount_setattr %s writable", real);
  if (syscall(NR_move_mount, tree, "", AT_FDCWD, real, M_MOVE_MOUNT_F_EMPTY_PATH) != 0)
    failf(EXIT_SETUP, errno, "move_mount %s", real);
  close(tree);
}

/*
 * Makes / read-only (recursively, private so nothing propagates back to the caller's namespace)
 * and binds each write root writable again. Metadata calls then fail with EROFS outside the write
 * roots however they name the file (path, *at, or a descriptor opened earlier in the sandbox),
 * because the read-only flag sits on the mount the file was reached through. Character devices
 * such as /dev/null stay writable on a read-only mount; regular --write-file files get their own
 * bind. A root nested in another is covered by the outer bind (binding it again would turn a
 * rename between them into EXDEV).
 */
static int remount_read_only(const struct options *o) {
  static char real[2 * MAX_PATHS][4096];
  int nreal = 0;
  for (int i = 0; i < o->ndirs + o->nfiles; i++) {
    const char *p = i < o->ndirs ? o->dirs[i] : o->files[i - o->ndirs];
    struct stat st;
    if (!realpath(p, real[nreal])) failf(EXIT_SETUP, errno, "cannot resolve write root %s", p);
    if (stat(real[nreal], &st) != 0) failf(EXIT_SETUP, errno, "cannot stat write root %s", p);
    /*
     * Character devices (/dev/null) stay writable on a read-only mount; a root that was read-only
     * before stays so (clearing the flag on its bind would grant more than the caller had).
     */
    struct statvfs vfs;
    int was_read_only = statvfs(real[nreal], &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
    if ((S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) && !was_read_only) nreal++;
  }
  char cwd[4096];
  int have_cwd = getcwd(cwd, sizeof cwd) != NULL;
  struct m_mount_attr ro = {.attr_set = M_MOUNT_ATTR_RDONLY, .propagation = M_MS_PRIVATE};
  if (syscall(NR_mount_setattr, AT_FDCWD, "/", M_AT_RECURSIVE, &ro, sizeof ro) != 0) {
    /* A user namespace without mount rights (e.g. Ubuntu's AppArmor policy): nothing changed yet. */
    if (errno == EPERM || errno == EACCES) return -1;
    fail(EXIT_SETUP, "mount_setattr / read-only", errno);
  }
  for (int i = 0; i < nreal; i++) {
    int covered = 0;
    for (int j = 0; j < nreal && !covered; j++)
      if (j != i && beneath(real[i], real[j]) && (strcmp(real[i], real[j]) != 0 || j < i)) covered = 1;
    if (!covered) bind_writable(real[i]);
  }
  /*
   * A private, empty /dev/shm (POSIX semaphores and shared memory: Python's multiprocessing needs
   * it): the command sees nothing of other processes' there, and it vanishes with the namespace.
   */
  struct stat shm;
  if (stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) &&
      mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64m,mode=1777") != 0)
    fail(EXIT_SETUP, "mount a private /dev/shm", errno);
  /* The working folder still points into the read-only mount below a fresh bind: look it up again. */
  if (have_cwd && chdir(cwd) != 0) fail(EXIT_SETUP, "chdir back to the working folder", errno);
  return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Capabilities and seccomp
 */

/*
 * A root caller keeps Docker's default capability set after exec minus CAP_MKNOD (a block device
 * node made in a write root would open the raw disk) and CAP_NET_RAW (a packet socket on lo would
 * capture other processes' loopback traffic, bearer tokens included). Everything else leaves the
 * bounding set: CAP_SYS_ADMIN above all (mount_setattr could clear the read-only flags),
 * CAP_DAC_READ_SEARCH (opens files by handle), CAP_SYS_PTRACE. Harmless for other callers (EPERM:
 * they have nothing to drop, and no_new_privs keeps them from gaining anything).
 */
static void drop_capabilities(void) {
  static const int keep[] = {CAP_CHOWN,   CAP_DAC_OVERRIDE, CAP_FSETID,           CAP_FOWNER,
                             CAP_SETGID,  CAP_SETUID,       CAP_SETFCAP,          CAP_SETPCAP,
                             CAP_SYS_CHROOT, CAP_KILL,      CAP_NET_BIND_SERVICE, CAP_AUDIT_WRITE};
  for (int cap = 0; cap <= 63; cap++) {
    int kept = 0;
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) kept |= keep[k] == cap;
    if (kept) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break; /* past the kernel's last capability */
      if (errno == EPERM) return; /* not privileged: nothing to drop */
    }
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

#define DENY_EPERM BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define IF_NR(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), DENY_EPERM

/*
 * EPERM for: setsid and setpgid (the program stays in its process group), the mount system calls
 * (the read-only mounts stay), and, when `no_metadata`, every call that changes a file's metadata
 * (the fallback where no mount namespace is permitted). System calls of a foreign ABI (i386 or
 * x32 on x86_64) fail with ENOSYS, so nothing reaches these calls under another number.
 */
static void install_seccomp(int no_metadata) {
  struct sock_filter head[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
      /* The x32 ABI shares the arch value; its numbers carry bit 30. */
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
#endif
      IF_NR(SYS_setsid),
      IF_NR(SYS_setpgid),
      IF_NR(SYS_mount),
      IF_NR(SYS_umount2),
      IF_NR(SYS_pivot_root),
      IF_NR(NR_open_tree),
      IF_NR(NR_move_mount),
      IF_NR(NR_fsopen),
      IF_NR(NR_fsconfig),
      IF_NR(NR_fsmount),
      IF_NR(NR_fspick),
      IF_NR(NR_mount_setattr),
  };
  struct sock_filter metadata[] = {
#ifdef SYS_chmod
      IF_NR(SYS_chmod),
#endif
#ifdef SYS_chown
      IF_NR(SYS_chown),
#endif
#ifdef SYS_lchown
      IF_NR(SYS_lchown),
#endif
#ifdef SYS_utime
      IF_NR(SYS_utime),
#endif
#ifdef SYS_utimes
      IF_NR(SYS_utimes),
#endif
#ifdef SYS_futimesat
      IF_NR(SYS_futimesat),
#endif
      IF_NR(SYS_fchmod),
      IF_NR(SYS_fchmodat),
      IF_NR(NR_fchmodat2),
      IF_NR(SYS_fchown),
      IF_NR(SYS_fchownat),
      IF_NR(SYS_utimensat),
      IF_NR(SYS_setxattr),
      IF_NR(SYS_lsetxattr),
      IF_NR(SYS_fsetxattr),
      IF_NR(NR_setxattrat),
      IF_NR(SYS_removexattr),
      IF_NR(SYS_lremovexattr),
      IF_NR(SYS_fremovexattr),
      IF_NR(NR_removexattrat),
  };
  struct sock_filter tail[] = {ALLOW};
  struct sock_filter filter[sizeof head / sizeof head[0] + sizeof metadata / sizeof metadata[0] + 1];
  size_t n = 0;
  memcpy(filter, head, sizeof head);
  n += sizeof head / sizeof head[0];
  if (no_metadata) {
    memcpy(filter + n, metadata, sizeof metadata);
    n += sizeof metadata / sizeof metadata[0];
  }
  filter[n++] = tail[0];
  struct sock_fprog prog = {.len = (unsigned short)n, .filter = filter};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) fail(EXIT_SETUP, "seccomp filter", errno);
}

/*
 * Confines the calling process (the command, just before exec). Exits 125 on any failure. Returns
 * whether metadata is confined to the write roots (mount namespace) rather than refused everywhere.
 */
static int confine(const struct options *o) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  if (abi < 1) fail(EXIT_SETUP, "Landlock is not available on this kernel", errno);
  int precise = enter_mount_namespace() == 0 && remount_read_only(o) == 0;
  int ruleset = landlock_ruleset(o, abi, precise);
  drop_capabilities();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail(EXIT_SETUP, "no_new_privs", errno);
  install_seccomp(!precise);
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) fail(EXIT_SETUP, "landlock_restrict_self", errno);
  close(ruleset);
  return precise;
}

/* ------------------------------------------------------------------------------------------------
 * Supervision
 */

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The parent pid from /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may hold spaces or ')'). */
static pid_t parent_of(const char *pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%s/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *close_paren = strrchr(buf, ')');
  if (!close_paren) return -1;
  char state;
  int ppid;
  if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

/*
 * Signals `pid` only if it is still the child of `parent` (or, reparented, ours): the pidfd pins the
 * process, so a pid that was freed and reused since the /proc walk (by a process that is not ours)
 * is left alone. A new holder with the same parent would be a descendant too.
 */
static void signal_if_child_of(pid_t pid, pid_t parent, int sig) {
  char name[32];
  snprintf(name, sizeof name, "%d", (int)pid);
  int fd = (int)syscall(NR_pidfd_open, pid, 0);
  if (fd < 0) {
    if (errno == ENOSYS) kill(pid, sig); /* before Linux 5.3: the plain, racy way */
    return;
  }
  pid_t now = parent_of(name);
  /* Reparented to us meanwhile (its parent died): still ours. */
  if (now == parent || now == getpid()) syscall(NR_pidfd_send_signal, fd, sig, NULL, 0);
  close(fd);
}

/*
 * Sends `sig` to every descendant of this process: a walk of /proc's parent links from us. We are a
 * child subreaper, so a descendant whose parent died was reparented to us and is still found, also
 * after setsid. Returns how many were signalled.
 */
static int signal_descendants(int sig) {
  static pid_t *pids, *ppids;
  static size_t cap;
  size_t n = 0;
  DIR *d = opendir("/proc");
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!is_pid_name(e->d_name)) continue;
    pid_t pp = parent_of(e->d_name);
    if (pp < 0) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 1024;
      pids = realloc(pids, cap * sizeof *pids);
      ppids = realloc(ppids, cap * sizeof *ppids);
      if (!pids || !ppids) fail(EXIT_SETUP, "out of memory", 0);
    }
    pids[n] = (pid_t)atoi(e->d_name);
    ppids[n++] = pp;
  }
  closedir(d);
  /*
   * Mark descendants: a process whose parent is us or a marked process. (A separate mark: a
   * sentinel value in ppids would match pid 1's and kthreadd's parent 0 and take in the system.)
   */
  static unsigned char *marked;
  static size_t marked_cap;
  if (marked_cap < n) {
    marked_cap = cap;
    marked = realloc(marked, marked_cap);
    if (!marked) fail(EXIT_SETUP, "out of memory", 0);
  }
  memset(marked, 0, n);
  pid_t self = getpid();
  int changed = 1;
  while (changed) {
    changed = 0;
    for (size_t i = 0; i < n; i++) {
      if (marked[i] || pids[i] == self || pids[i] <= 1) continue;
      int mine = ppids[i] == self;
      for (size_t j = 0; j < n && !mine; j++) mine = marked[j] && pids[j] == ppids[i];
      if (mine) marked[i] = changed = 1;
    }
  }
  int count = 0;
  for (size_t i = 0; i < n; i++)
    if (marked[i]) {
      signal_if_child_of(pids[i], ppids[i], sig);
      count++;
    }
  return count;
}

/*
 * SIGKILLs and reaps every descendant until none is left. Each round kills what /proc shows and
 * waits for one child; a process forked in the meantime is either found next round or, when its
 * parent dies, becomes our child. No child left means no descendant left.
 */
static void kill_all_descendants(void) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  /* The common case: the command left nothing behind, so skip the /proc walk. */
  if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 && errno == ECHILD) return;
  for (;;) {
    signal_descendants(SIGKILL);
    int status;
    pid_t r = waitpid(-1, &status, 0);
    if (r < 0 && errno == ECHILD) return;
    while (waitpid(-1, &status, WNOHANG) > 0) {
    }
  }
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (type == FTW_DP) rmdir(path);
  else unlink(path);
  return 0;
}

/*
 * Removes each --cleanup folder, without following links or entering other file systems (nothing
 * in it runs any more, so nothing can swap a link in meanwhile).
 */
static void cleanup(const struct options *o) {
  for (int i = 0; i < o->ncleanups; i++) nftw(o->cleanups[i], remove_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* Leaves the way the command did: its status, or its signal re-raised. */
static int exit_like(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
    raise(sig);
    return 128 + sig;
  }
  return EXIT_SETUP;
}

static void print_probe(long abi, int precise) {
  printf("landlock abi %ld\n", abi);
  printf("feature reads yes\n");
  printf(precise ? "feature metadata yes\n"
                 : "feature metadata no (no mount namespace here: every metadata change is refused)\n");
  printf("feature signals %s\n", abi >= 6 ? "yes" : "no");
  printf("feature proc yes\n");
}

/* The probe's child exits with this when metadata fell back to seccomp (0 when confined precisely). */
#define PROBE_METADATA_FALLBACK 3

/* ------------------------------------------------------------------------------------------------
 * The supervisor
 */

/* The signals the supervisor acts on, blocked in it; the command gets `original` back. */
static sigset_t watched, original;

/*
 * Starts the command as our child, confined unless --supervise-only.
 *
 * vfork: the child borrows our memory until it execs, which saves a page-table copy. It makes
 * system calls and a few allocations (opendir; they leak into our heap, harmlessly), writes
 * nothing we read afterwards, and leaves through exec or _exit, which is what vfork allows.
 */
static pid_t start_command(const struct options *o, char **argv) {
  pid_t self = getpid();
  pid_t child = vfork();
  if (child < 0) fail(EXIT_SETUP, "vfork", errno);
  if (child == 0) {
    /* If the supervisor is gone, so is the command. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail(EXIT_SETUP, "PR_SET_PDEATHSIG", errno);
    if (getppid() != self) _exit(EXIT_SETUP);
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    int precise = o->supervise_only ? 1 : confine(o);
    sigprocmask(SIG_SETMASK, &original, NULL);
    if (o->probe) _exit(precise ? 0 : PROBE_METADATA_FALLBACK);
    execvp(argv[o->cmd], &argv[o->cmd]);
    failf(EXIT_NOT_RUNNABLE, errno, "cannot run %s", argv[o->cmd]);
  }
  return child;
}

static struct {
  long timeout_at, kill_at; /* deadlines (monotonic ms, -1 for none) */
  int timed_out, parent_died;
} sv;

/*
 * Waits until `child` exits and returns its wait status, acting on the time limit, on signals to
 * the supervisor and on the parent's death meanwhile.
 */
static int wait_for(pid_t child, const struct options *o) {
  for (;;) {
    int st;
    pid_t r;
    while ((r = waitpid(-1, &st, WNOHANG)) > 0)
      if (r == child) return st;
    long now = now_ms(), next = -1;
    if (sv.timeout_at >= 0 && !sv.timed_out) {
      if (now >= sv.timeout_at) {
        sv.timed_out = 1;
        signal_descendants(SIGTERM);
        if (sv.kill_at < 0 || now + o->kill_grace_ms < sv.kill_at) sv.kill_at = now + o->kill_grace_ms;
      } else next = sv.timeout_at;
    }
    if (sv.kill_at >= 0) {
      if (now >= sv.kill_at) {
        signal_descendants(SIGKILL);
        sv.kill_at = -1;
      } else if (next < 0 || sv.kill_at < next) next = sv.kill_at;
    }
    struct timespec wait = {0, 0};
    if (next >= 0) {
      wait.tv_sec = (next - now) / 1000;
      wait.tv_nsec = ((next - now) % 1000) * 1000000L;
    }
    siginfo_t info;
    int sig = sigtimedwait(&watched, &info, next >= 0 ? &wait : NULL);
    if (sig == SIGUSR1) {
      /* Our parent died: nobody waits for the command any more. */
      sv.parent_died = 1;
      signal_descendants(SIGKILL);
    } else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      /* Forwarded to everything (a group signal also reached the command itself: it may get two). */
      signal_descendants(sig);
      if (sv.kill_at < 0) sv.kill_at = now_ms() + o->kill_grace_ms;
    }
  }
}

int main(int argc, char **argv) {
  /* Static, not on the stack or in registers: the vfork child below shares them with us. */
  static struct options o;
  parse_options(argc, argv, &o);

  pid_t parent = getppid();
  /*
   * The signals the supervisor acts on are blocked and taken with sigtimedwait, so none is lost
   * between checks. SIGUSR1 is our parent's death (PR_SET_PDEATHSIG).
   */
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGTERM);
  sigaddset(&watched, SIGINT);
  sigaddset(&watched, SIGHUP);
  sigaddset(&watched, SIGUSR1);
  sigprocmask(SIG_BLOCK, &watched, &original);
  /* An inherited SIG_IGN would make the kernel reap our children before we see their status. */
  signal(SIGCHLD, SIG_DFL);
  if (prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0) != 0) fail(EXIT_SETUP, "PR_SET_PDEATHSIG", errno);
  if (getppid() != parent) {
    cleanup(&o);
    _exit(EXIT_SETUP);
  }
  /* Orphans of the command become our children, so they can still be found and killed. */
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) fail(EXIT_SETUP, "PR_SET_CHILD_SUBREAPER", errno);

  sv.timeout_at = o.timeout_ms >= 0 ? now_ms() + o.timeout_ms : -1;
  sv.kill_at = -1;
  int status = wait_for(start_command(&o, argv), &o);

  kill_all_descendants();
  cleanup(&o);
  if (sv.parent_died) _exit(EXIT_SETUP);
  if (sv.timed_out) {
    fprintf(stderr, "ratchet-confine: timed out after %ld ms\n", o.timeout_ms);
    return EXIT_TIMEOUT;
  }
  int probe_ok = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == PROBE_METADATA_FALLBACK);
  if (o.probe && probe_ok) {
    if (o.supervise_only) printf("supervise-only\n");
    else
      print_probe(syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION), WEXITSTATUS(status) == 0);
    return 0;
  }
  return exit_like(status);
}
