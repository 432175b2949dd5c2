# Ratchet's pre-started Python interpreter (src/exec/forkserver.ts starts it; docs/performance.md).
#
#   ratchet-confine <the step's confinement, without --proc-self> -- python3 -B -c <this file> SOCKET
#
# Started THROUGH THE DOOR with the confinement a plain start of the script gets, so every child
# inherits exactly that Landlock domain, mount namespace, seccomp filter, capabilities and
# supervisor. It connects once to SOCKET (Ratchet's listener, which accepts one connection and
# removes the path), then serves one run at a time:
#
#   server ── fork ──► keeper (nested Landlock domain K: scopes signals and abstract sockets
#    (domain S)         only; child subreaper) ── fork ──► the script's child, which narrows
#                       itself into domain R nested in K (the run's own roots + the same scopes +
#                       the metadata filter) before any script byte runs, then becomes __main__
#
# Signals go only inward (Landlock's signal scope): the server reaches everything, the keeper the
# run's processes but never the server (its `kill(-1)` kills exactly the run, itself excepted),
# the script only its own descendants — not its keeper, not the server, not another server's
# runs — as a plain start's script cannot signal its supervisor. Nor can it ptrace or read /proc
# of any of them.
#
# Frames on the socket, both ways: 1 byte kind, 4 bytes big-endian length, payload.
#   to the server:  b"q" JSON request {argv, cwd, env, path0, timeoutMs, killGraceMs, confine?} |
#                   b"c" cancel  (confine: {reads, writes, files}, the run's own Landlock roots)
#   from the server: b"r" ready | b"u" unsupported (reason) | b"o"/b"e" stdout/stderr bytes |
#                    b"s" JSON status {exitCode, signal, timedOut, cancelled, pid, ran}
#                    (ran: the script's child was confined and started the script)
import sys

# The modules a plain `python3 -B main.py` has before the script runs (what this file adds is
# dropped from sys.modules in the child).
_BASELINE = frozenset(sys.modules)

import ctypes  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_RESTRICT_SELF = 446
_SCOPE = (1 << 0) | (1 << 1)  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL (ABI 6)
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


_SYS_LANDLOCK_ADD_RULE = 445
_LL_EXECUTE, _LL_WRITE_FILE, _LL_READ_FILE, _LL_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_LL_READ = _LL_EXECUTE | _LL_READ_FILE | _LL_READ_DIR
_LL_TRUNCATE = 1 << 14
_LL_FILE = _LL_EXECUTE | _LL_WRITE_FILE | _LL_READ_FILE | _LL_TRUNCATE
_O_PATH = 0o10000000


def _write_rights(abi):
    """The write rights ratchet-confine handles on this ABI (native/confine.c write_rights)."""
    r = _LL_WRITE_FILE
    for bit in range(4, 13):  # REMOVE_DIR .. MAKE_SYM
        r |= 1 << bit
    if abi >= 2:
        r |= 1 << 13  # REFER
    if abi >= 3:
        r |= _LL_TRUNCATE
    return r


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _add_rule(ruleset, path, allowed, optional):
    try:
        fd = os.open(path, _O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        if optional:
            return None
        return "cannot open " + path
    except OSError as e:
        return "cannot open %s: %s" % (path, e.strerror)
    try:
        if not os.path.isdir(path):
            allowed &= _LL_FILE  # Landlock refuses folder rights on a file
        attr = _PathBeneath(allowed, fd)
        if _libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, 1, ctypes.byref(attr), 0) != 0:
            return "landlock_add_rule %s: %s" % (path, os.strerror(ctypes.get_errno()))
    finally:
        os.close(fd)
    return None


# Metadata calls (x86_64 numbers): refused with EPERM in a run's child. The server's write roots
# (the run home's runs folder) are writable mounts, and Landlock does not govern chmod/chown/utime/
# xattr, so a run cannot be given "metadata only inside its own output folder" here; it gets
# ratchet-confine's own fallback instead (refused everywhere, as without a mount namespace).
_METADATA_NR_X86_64 = (90, 91, 92, 93, 94, 132, 235, 261, 268, 452, 260, 280, 188, 189, 190, 463, 197,
                       198, 199, 466)
_AUDIT_ARCH_X86_64 = 0xC000003E


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _refuse_metadata():
    if os.uname().machine != "x86_64":
        return "metadata filter: only built for x86_64"
    ld, jeq, ret = 0x20, 0x15, 0x06
    allow, eperm = 0x7FFF0000, 0x00050000 | 1
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, _AUDIT_ARCH_X86_64), (ret, 0, 0, allow), (ld, 0, 0, 0)]
    for nr in _METADATA_NR_X86_64:
        prog += [(jeq, 0, 1, nr), (ret, 0, 0, eperm)]
    prog.append((ret, 0, 0, allow))
    arr = (_SockFilter * len(prog))(*[_SockFilter(*x) for x in prog])
    fprog = _SockFprog(len(prog), arr)
    if _libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        return "seccomp metadata filter: " + os.strerror(ctypes.get_errno())
    return None


def _scope_domain(confine=None):
    """Enters a nested Landlock domain that scopes signals and abstract sockets: from here on no
    signal reaches a process outside it (its parent's domain included). With `confine` ({reads,
    writes, files}: the run's own confinement) the domain also handles every file right
    ratchet-confine handles and allows only the run's own roots, and a seccomp filter refuses
    metadata calls, so the run is held to its own policy inside the server's wider one (Landlock
    layers: an access must be allowed by every layer). Without `confine` the launcher's rules stay
    exactly as they are."""
    handled = 0
    if confine is not None:
        abi = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), 1)
        if abi < 6:
            return "Landlock ABI 6 is needed for a run's own ruleset"
        handled = _write_rights(abi) | _LL_READ
    attr = (ctypes.c_uint64 * 3)(handled, 0, _SCOPE)
    fd = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(24), 0)
    if fd < 0:
        return "landlock_create_ruleset: " + os.strerror(ctypes.get_errno())
    try:
        if confine is not None:
            for p in confine["reads"]:
                why = _add_rule(fd, p, _LL_READ, True)
                if why:
                    return why
            for p in confine["writes"]:
                why = _add_rule(fd, p, handled, False)
                if why:
                    return why
            for p in confine["files"]:
                why = _add_rule(fd, p, handled & _LL_FILE, False)
                if why:
                    return why
            why = _refuse_metadata()
            if why:
                return why
        r = _libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, fd, 0)
        if r != 0:
            return "landlock_restrict_self: " + os.strerror(ctypes.get_errno())
    finally:
        os.close(fd)
    return None


def _die_with(parent):
    """SIGKILL when `parent` dies (as ratchet-confine gives its command), or why not."""
    if _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return "PR_SET_PDEATHSIG: " + os.strerror(ctypes.get_errno())
    if os.getppid() != parent:
        return "the parent ended before the run started"
    return None


def _send(sock, kind, payload=b""):
    sock.sendall(kind + len(payload).to_bytes(4, "big") + payload)


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _recv(sock):
    head = _recv_exact(sock, 5)
    if head is None:
        return None, None
    return head[:1], _recv_exact(sock, int.from_bytes(head[1:], "big"))


def _run_script(req, out_w, err_w):
    """In the script's process: become `python3 -B <argv…>` and never return."""
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    for fd in (null, out_w, err_w):
        if fd > 2:
            os.close(fd)
    os.chdir(req["cwd"])
    env = req["env"]
    os.environ.clear()
    os.environ.update(env)
    argv = req["argv"]
    path = os.path.join(req["cwd"], argv[0])
    sys.argv[:] = argv
    sys.path[0] = req["path0"]
    for name in list(sys.modules):
        if name not in _BASELINE:
            del sys.modules[name]
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    main = type(sys)("__main__")
    loader = sys.modules["_frozen_importlib_external"].SourceFileLoader("__main__", path)
    main.__dict__.update(
        __file__=path, __builtins__=sys.modules["builtins"], __loader__=loader, __cached__=None,
        __annotations__={},
    )
    sys.modules["__main__"] = main
    code = 0
    try:
        with open(path, "rb") as f:
            source = f.read()
        exec(compile(source, path, "exec"), main.__dict__)
    except SystemExit as e:
        c = e.code
        if c is None:
            code = 0
        elif isinstance(c, int):
            code = c & 0xFF
        else:
            print(c, file=sys.stderr)
            code = 1
    except BaseException:
        t, v, tb = sys.exc_info()
        tb = tb.tb_next if tb is not None else None  # not this file's frame
        if v is not None:
            v.__traceback__ = tb
        sys.excepthook(t, v, tb)
        code = 1
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            code = code or 120
    os._exit(code)


def _setup_failed(err_w, why):
    os.write(err_w, ("ratchet-forkserver: cannot confine the run: " + why + "\n").encode())
    os._exit(125)


def _keeper(req, out_w, err_w, ok_w, server):
    """The run's root, outside the script's domain: starts the script, then kills whatever it left
    and reports its status."""
    why = _die_with(server) or _scope_domain()
    if not why and _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        why = "PR_SET_CHILD_SUBREAPER: " + os.strerror(ctypes.get_errno())
    if why:
        _setup_failed(err_w, why)
    keeper = os.getpid()
    grace = [False]

    def on_term(signum, _frame):  # the server's time limit or cancel: TERM everything, KILL later
        sig = signal.SIGKILL if grace[0] else signal.SIGTERM
        grace[0] = True
        try:
            os.kill(-1, sig)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, on_term)
    # Blocked across the fork: a TERM arriving before the child has reset it must not run on_term
    # (a kill(-1)) in the child, where it would still reach the keeper.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        # The script's own domain, nested in the keeper's: from here on it cannot signal, ptrace
        # or read /proc of the keeper, the server or anything else outside its own descendants.
        why = _die_with(keeper) or _scope_domain(req.get("confine"))
        if why:
            _setup_failed(err_w, why)
        os.write(ok_w, b"k")
        os.close(ok_w)
        _run_script(req, out_w, err_w)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    os.close(ok_w)
    os.close(out_w)
    os.close(err_w)
    _, status = os.waitpid(pid, 0)
    try:
        os.kill(-1, signal.SIGKILL)  # nothing the script started outlives it
    except ProcessLookupError:
        pass
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _kill_all(sig):
    """Every process of the sandbox but this one: the run's (only one run at a time). Landlock's
    signal scope keeps it inside the sandbox (checked at start: pid 1 is out of reach)."""
    try:
        os.kill(-1, sig)
    except ProcessLookupError:
        pass


def _drain():
    """Kills the rest of the run and waits until it is gone. The server is a child subreaper, so
    whatever the run left (its keeper gone) is re-parented here and reaped here."""
    _kill_all(signal.SIGKILL)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def _serve_one(sock, req):
    # Socket pairs, as Node's spawn gives a plain start for stdout and stderr.
    out_r, out_w = (x.detach() for x in socket.socketpair())
    err_r, err_w = (x.detach() for x in socket.socketpair())
    # One byte from the script's child once it is confined, before the script: the only proof
    # that the script ran (its exit code and stderr are the script's to choose).
    ok_r, ok_w = os.pipe()
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        sock.close()
        os.close(out_r)
        os.close(err_r)
        os.close(ok_r)
        _keeper(req, out_w, err_w, ok_w, server)
    os.close(out_w)
    os.close(err_w)
    os.close(ok_w)
    keeper = os.pidfd_open(pid)
    started = time.monotonic()
    timeout = req["timeoutMs"] / 1000.0
    grace = req["killGraceMs"] / 1000.0
    timed_out = cancelled = hung_up = False
    status = None
    term_at = None
    open_fds = {out_r: b"o", err_r: b"e"}
    while open_fds or status is None:
        now = time.monotonic()
        if term_at is None and timeout > 0 and now - started >= timeout:
            timed_out, term_at = True, now
            _kill_all(signal.SIGTERM)
        elif term_at is not None and now - term_at >= grace:
            _kill_all(signal.SIGKILL)
            term_at = float("inf")
        if term_at is not None:
            wait = [0.05]
        elif timeout > 0:
            wait = [max(0.0, timeout - (now - started))]
        else:
            wait = []
        watch = [*open_fds, *([keeper] if status is None else []), *([sock] if sock else [])]
        ready, _, _ = select.select(watch, [], [], *wait)
        for fd in ready:
            if fd is sock:
                kind, _ = _recv(sock)
                hung_up = hung_up or kind is None
                if term_at is None and (kind is None or kind == b"c"):
                    cancelled, term_at = True, time.monotonic()
                    _kill_all(signal.SIGTERM)
                if hung_up:
                    sock = None
            elif fd == keeper:
                _, status = os.waitpid(pid, 0)
                os.close(keeper)
                # The keeper is gone: nothing of the run stays (so no writer of ok_r is left either).
                _drain()
                ran = os.read(ok_r, 1) == b"k"
                os.close(ok_r)
            else:
                data = os.read(fd, 65536)
                if data:
                    if sock:
                        _send(sock, open_fds[fd], data)
                else:
                    os.close(fd)
                    del open_fds[fd]
    exit_code = os.waitstatus_to_exitcode(status)
    st = {
        "exitCode": exit_code if exit_code >= 0 else None,
        "signal": signal.Signals(-exit_code).name if exit_code < 0 else None,
        "timedOut": timed_out,
        "cancelled": cancelled,
        "pid": pid,
        "ran": ran,
    }
    if hung_up:
        return False
    _send(sock, b"s", json.dumps(st).encode())
    return True


def main():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(sys.argv[1])
    # Can the keeper's nested domain be made here? (A kernel without Landlock ABI 6 cannot.)
    probe = os.fork()
    if probe == 0:
        try:
            os.kill(1, 0)
            why = "signals reach outside the sandbox (not started under ratchet-confine's signal scope)"
        except PermissionError:
            why = _scope_domain()
        except OSError as e:
            why = "kill(1, 0): " + str(e)
        if why:
            os.write(2, (why + "\n").encode())
        os._exit(1 if why else 0)
    _, status = os.waitpid(probe, 0)
    if status != 0:
        _send(sock, b"u", b"the sandbox does not scope signals (Landlock ABI 6 under ratchet-confine is needed)")
        return
    if _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        _send(sock, b"u", b"PR_SET_CHILD_SUBREAPER failed")
        return
    _send(sock, b"r", str(os.getpid()).encode())
    while True:
        kind, payload = _recv(sock)
        if kind is None:
            return
        if kind == b"q" and not _serve_one(sock, json.loads(payload)):
            return


main()
