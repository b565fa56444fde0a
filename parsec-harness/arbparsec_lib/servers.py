"""The latency-sensitive servers `arbparsec colocate` can run: unmodified Debian packages, started
by the harness on a free port of 127.0.0.1 and loaded by arbloadgen in their own protocol.

To add a server: give it a Server entry below (how to start it, how to see that it is ready, its
default worker threads) and, when it speaks a protocol arbloadgen does not know yet, teach
arbloadgen that protocol (loadgen/arbloadgen.c: a request writer and an answer parser, selected
with --protocol)."""
import socket
from dataclasses import dataclass
from typing import Callable


def _ask(port, request, expect, timeout_s=0.5):
    """True when the server on 127.0.0.1:port answers request with bytes starting with expect."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
            s.sendall(request)
            return s.recv(64).startswith(expect)
    except OSError:
        return False


@dataclass(frozen=True)
class Server:
    name: str
    binary: str  # default program, looked up in PATH
    package: str  # the Debian package that provides it
    protocol: str  # arbloadgen --protocol
    argv: Callable  # (binary, port, threads, is_root, workdir) -> argv
    ready: Callable  # (port) -> bool
    default_threads: Callable  # (cpus) -> worker threads when --server-threads is not given
    threads_meaning: str  # what --server-threads sets, for the report


def _memcached_argv(binary, port, threads, is_root, _workdir):
    return [binary] + (["-u", "root"] if is_root else []) + [
        "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", str(threads), "-c", "4096"]


def _redis_argv(binary, port, threads, _is_root, workdir):
    # No persistence (nothing written but to the scratch directory), no daemon, logs to stdout.
    return [binary, "--port", str(port), "--bind", "127.0.0.1", "--protected-mode", "no",
            "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", workdir,
            "--logfile", "", "--io-threads", str(threads)]


SERVERS = {
    "memcached": Server("memcached", "memcached", "memcached", "memcached", _memcached_argv,
                        lambda port: _ask(port, b"version\r\n", b"VERSION"),
                        lambda cpus: max(1, cpus), "memcached -t N (worker threads)"),
    "redis": Server("redis", "redis-server", "redis-server", "redis", _redis_argv,
                    lambda port: _ask(port, b"PING\r\n", b"+PONG"),
                    lambda _cpus: 1, "redis-server --io-threads N (1: its own default, the main "
                                      "thread does all I/O)"),
}
