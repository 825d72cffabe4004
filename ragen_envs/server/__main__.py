"""``python -m ragen_envs.server [--host 127.0.0.1] [--port 8000] [policy flags]``: serve the games until Ctrl-C.

The first line on stdout is ``ragen_envs.server: listening on http://HOST:PORT``; with ``--port 0`` a
parent process reads the port it got from that line. What clients may ask is set by the policy flags
(:func:`ragen_envs.server.policy.add_policy_arguments`); binding beyond loopback needs ``--auth-token-env``.
"""

from __future__ import annotations

import argparse
import sys

from ragen_envs.server.app import EnvServer
from ragen_envs.server.episodes import EpisodeStore
from ragen_envs.server.policy import add_policy_arguments, server_policy


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, serve until interrupted; returns the exit status (2 for a usage error)."""
    parser = argparse.ArgumentParser(prog="python -m ragen_envs.server", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind; the default keeps the server on this machine (0.0.0.0: every "
                             "interface, which needs --auth-token-env)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free one")
    parser.add_argument("--max-episodes", type=int, default=1024, help="episodes held at once, by all clients")
    parser.add_argument("--idle-timeout", type=float, default=600.0,
                        help="seconds after which an episode nobody touched is dropped")
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")
    add_policy_arguments(parser)
    args = parser.parse_args(argv)
    policy = server_policy(parser, args)
    try:
        store = EpisodeStore(args.max_episodes, args.idle_timeout, max_per_client=policy.max_sessions_per_client)
    except ValueError as exc:
        parser.error(str(exc).replace("max_episodes", "--max-episodes").replace("idle_timeout_s", "--idle-timeout"))
    try:
        server = EnvServer((args.host, args.port), store, policy=policy, verbose=args.verbose)
    except OSError as exc:
        print(f"python -m ragen_envs.server: cannot bind {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    print(f"ragen_envs.server: listening on {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
