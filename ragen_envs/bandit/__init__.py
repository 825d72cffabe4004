"""Bandit: K named arms, one low-risk and the rest high-risk, shuffled every reset (RAGEN's first test).

>>> import ragen_envs
>>> env = ragen_envs.make("bandit")
>>> obs, info = env.reset(seed=0)
>>> env.unwrapped.action_names  # e.g. ('Dragon', 'Phoenix')
"""

from ragen_envs.bandit.config import BanditConfig
from ragen_envs.bandit.env import BanditEnv
from ragen_envs.bandit.level import Arm, BanditLevel, certificate, generate
from ragen_envs.bandit.names import NAME_POOLS, NamePool

__all__ = ["NAME_POOLS", "Arm", "BanditConfig", "BanditEnv", "BanditLevel", "NamePool", "certificate", "generate"]
