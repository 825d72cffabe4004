"""``python -m ragen_envs.openenv_server [--env sokoban] [--port 8000]``: serve the games to OpenEnv clients.

The first line on stdout is ``ragen_envs.openenv_server: listening on http://HOST:PORT``; with ``--port 0``
a parent process reads the port it got from that line.
"""

from __future__ import annotations

import argparse
import socket
import sys

from ragen_envs.openenv_server.app import build_app, serve
from ragen_envs.openenv_server.environment import ServerSettings
from ragen_envs.registration import get_preset
from ragen_envs.server.policy import add_policy_arguments, server_policy


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, serve until interrupted; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m ragen_envs.openenv_server", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind; beyond loopback a token is required (--auth-token-env)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free one")
    parser.add_argument("--env", default="sokoban", help="preset played when a reset names none")
    parser.add_argument("--max-sessions", type=int, default=256,
                        help="sessions (WebSockets) held at once; one more is refused with OpenEnv's CAPACITY_REACHED")
    parser.add_argument("--idle-timeout", type=float, default=600.0,
                        help="seconds of silence after which a session's socket is closed and its slot freed")
    parser.add_argument("--reveal-certificate", action="store_true",
                        help="send each level's certificate (for Sokoban an optimal solution) to clients")
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")
    add_policy_arguments(parser)
    args = parser.parse_args(argv)
    if args.max_sessions < 1:
        parser.error(f"--max-sessions must be at least 1, got {args.max_sessions}")
    if not args.idle_timeout > 0:
        parser.error(f"--idle-timeout must be a positive number of seconds, got {args.idle_timeout}")
    try:
        get_preset(args.env)
    except ValueError as exc:
        parser.error(f"--env: {exc}")
    policy = server_policy(parser, args)
    if policy.max_connections < args.max_sessions:
        parser.error(f"--max-connections ({policy.max_connections}) counts sockets and HTTP requests together: "
                     f"it must be at least --max-sessions ({args.max_sessions})")
    app = build_app(ServerSettings(args.env, policy, args.reveal_certificate),
                    max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout)
    try:
        sock = socket.create_server((args.host, args.port), family=socket.AF_INET6 if ":" in args.host
                                    else socket.AF_INET, backlog=2048)
    except OSError as exc:
        print(f"python -m ragen_envs.openenv_server: cannot bind {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    host, port = sock.getsockname()[:2]
    print(f"ragen_envs.openenv_server: listening on http://{host}:{port}", flush=True)
    serve(app, sock, verbose=args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
