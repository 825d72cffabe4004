"""Countdown: reach a target from given numbers with + - * /, one answer (RAGEN's), certified by a solution."""

from ragen_envs.countdown.env import CountdownConfig, CountdownEnv, CountdownLevel, generate

__all__ = ["CountdownConfig", "CountdownEnv", "CountdownLevel", "generate"]
