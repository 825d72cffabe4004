"""The games over HTTP: ``python -m ragen_envs.server`` serves reset/step/state for every registered preset.

A client in any language (TRL's OpenEnv path, a trainer on another machine, a test) plays the games
through the text protocol without installing them: the server holds each episode as a
:class:`ragen_envs.text.TextEpisode`, so prompts, parsing, rewards and penalties are exactly those of an
in-process episode. Standard library only; nothing beyond ``pip install ragen-envs`` is needed.
What clients may ask is the operator's :class:`ClientPolicy` (presets by default). See docs/integrations.md.
"""

from ragen_envs.server.app import MAX_BODY_BYTES, EnvServer, start_server
from ragen_envs.server.episodes import ClientLimit, EpisodeFinished, EpisodeNotFound, EpisodeStore, StoreFull
from ragen_envs.server.policy import ClientPolicy, PolicyError

__all__ = ["MAX_BODY_BYTES", "ClientLimit", "ClientPolicy", "EnvServer", "EpisodeFinished", "EpisodeNotFound",
           "EpisodeStore", "PolicyError", "StoreFull", "start_server"]
