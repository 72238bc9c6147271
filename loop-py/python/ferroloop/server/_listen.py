"""The listening sockets a server serves on, and its "running on" line:
`bind_sockets` is the one bind path (the single-process server, the
supervisor, which binds once for its workers) and `bind_tcp` the one TCP
bind (the app's listener, the metrics listener)."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import stat

from ._config import Config

logger = logging.getLogger("ferroloop.error")


def bind_tcp(host: str, port: int, backlog: int) -> socket.socket:
    """A listening TCP socket on `host`:`port` (the app's listener, the
    metrics listener); a failure raises uvicorn's bind message."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise _bind_error(exc, f"address {(host, port)!r}") from None
    sock.setblocking(False)
    return sock


def log_running(config: Config, sock: socket.socket, *, tls: bool) -> None:
    """uvicorn's "running on" line, for the first listener."""
    if sock.family == socket.AF_UNIX:
        where, arg = "unix socket %s", sock.getsockname()
    elif config.fd is not None:
        where, arg = "socket fd %s", config.fd
    else:
        bound, port = sock.getsockname()[:2]
        # The host as configured (`localhost` stays `localhost`, as uvicorn
        # prints it), unless the socket came from elsewhere.
        given = config.sock is None and not os.environ.get("LISTEN_FDS")
        host = config.host if given else bound
        scheme = "https" if tls else "http"
        where, arg = (scheme + ("://[%s]:%d" if ":" in host else "://%s:%d")), (host, port)
    args = arg if isinstance(arg, tuple) else (arg,)
    logger.info("ferroloop running on " + where + " (Press CTRL+C to quit)", *args)


def bind_sockets(config: Config) -> tuple[list[socket.socket], list[socket.socket], str | None]:
    """The listening sockets `config` names: `sock`, `fd`, systemd's
    `LISTEN_FDS` (when `LISTEN_PID` is this process), `uds` (chmod to
    `uds_permissions`, default 0o666) or host/port. Returns (sockets, those
    of them this call created and the caller closes, the socket file the
    caller unlinks)."""
    if config.sock is not None:
        sock = config.sock
        sock.setblocking(False)
        with contextlib.suppress(OSError):
            sock.listen(config.backlog)
        return [sock], [], None
    activated = systemd_sockets()
    if activated:
        for sock in activated:
            sock.setblocking(False)
        return activated, activated, None
    uds_path = None
    if config.fd is not None:
        sock = socket.socket(fileno=config.fd)
        sock.setblocking(False)
        with contextlib.suppress(OSError):
            sock.listen(config.backlog)
    elif config.uds is not None:
        path = config.uds
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.stat(path).st_mode):
                os.unlink(path)  # a stale socket from an earlier run
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
            os.chmod(path, 0o666 if config.uds_permissions is None else config.uds_permissions)
            sock.listen(config.backlog)
        except OSError as exc:
            sock.close()
            raise _bind_error(exc, f"path {path!r}") from None
        except BaseException:
            sock.close()
            raise
        uds_path = path
    else:
        sock = bind_tcp(config.host, config.port, config.backlog)
    sock.setblocking(False)
    return [sock], [sock], uds_path


#: systemd's first passed fd (sd_listen_fds(3): SD_LISTEN_FDS_START).
LISTEN_FDS_START = 3


def systemd_sockets() -> list[socket.socket]:
    """Sockets passed by systemd socket activation: `LISTEN_FDS` fds from
    fd 3, when `LISTEN_PID` is this process. The variables are removed (as
    sd_listen_fds(unset_environment=1)), so children do not take them."""
    pid, count = os.environ.get("LISTEN_PID", ""), os.environ.get("LISTEN_FDS", "")
    if not (pid.isdigit() and count.isdigit()) or int(pid) != os.getpid() or int(count) == 0:
        return []
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(name, None)
    sockets = []
    for fd in range(LISTEN_FDS_START, LISTEN_FDS_START + int(count)):
        os.set_inheritable(fd, False)
        sockets.append(socket.socket(fileno=fd))
    return sockets


def _bind_error(exc: OSError, where: str) -> OSError:
    """uvicorn's message: `[Errno 98] error while attempting to bind on
    address ('127.0.0.1', 8123): address already in use`."""
    reason = (exc.strerror or str(exc)).lower()
    err = OSError(exc.errno, f"error while attempting to bind on {where}: {reason}")
    return err
