"""Collapse alerts fire on a dying signal and on grad-norm spikes, and not otherwise."""

from __future__ import annotations

import pytest

from ragen_train.collapse import CollapseMonitor
from ragen_train.config import TrainConfig


def _row(std: float, grad: float | None = 1.0, **more: float | None) -> dict:
    return {"rollout/in_group_std": std, "losses/grad_norm_actor": grad, **more}


def test_spread_collapse_alert():
    m = CollapseMonitor(window=3, drops={"rollout/in_group_std": 0.2}, spikes={"losses/grad_norm_actor": 10})
    for s in (0.5, 0.4, 0.6, 0.3, 0.2):
        assert m.update(_row(s)) == []  # fewer than 2 windows seen: no verdict yet
    assert m.early_level("rollout/in_group_std") == pytest.approx(0.5)
    assert m.update(_row(0.05)) == []  # last 3: mean 0.1833 >= 0.2 * 0.5
    alerts = m.update(_row(0.04))  # last 3: mean 0.0967 < 0.1
    assert len(alerts) == 1 and alerts[0].startswith("reward spread collapsed")


def test_grad_spike_alert_and_no_false_alarm():
    m = CollapseMonitor(window=3, drops={}, spikes={"losses/grad_norm_actor": 5})
    assert m.update(_row(0.5, 1.0)) == [] and m.update(_row(0.5, 2.0)) == []
    assert m.update(_row(0.5, 100.0)) == []  # only 2 earlier norms: not enough history
    assert m.update(_row(0.5, 9.9)) == []  # median of (1, 2, 100) = 2; 9.9 < 10
    assert m.update(_row(0.5, 20.0)) == []  # median of (1, 2, 100, 9.9) = 5.95; 20 < 29.75
    alerts = m.update(_row(0.5, 200.0))  # median of (1, 2, 100, 9.9, 20) = 9.9; 200 > 49.5
    assert len(alerts) == 1 and "grad norm spike" in alerts[0]


def test_each_reply_signal_and_the_critic_norm_can_alert():
    watched = ("rollout/reply_entropy", "rollout/reply_cond_entropy", "rollout/reply_mi")
    m = CollapseMonitor(window=2, drops={k: 0.5 for k in watched}, spikes={"losses/grad_norm_critic": 4})
    healthy = {"rollout/reply_entropy": 40.0, "rollout/reply_cond_entropy": 30.0, "rollout/reply_mi": 1.0,
               "losses/grad_norm_critic": 1.0}
    for _ in range(3):
        assert m.update(healthy) == []
    # only the mutual information falls (template collapse): mean of (1.0, 0.2) = 0.6 >= 0.5, then 0.2 < 0.5
    assert m.update({**healthy, "rollout/reply_mi": 0.2}) == []
    alerts = m.update({**healthy, "rollout/reply_mi": 0.2, "losses/grad_norm_critic": 4.5})
    assert [a.split(":")[0] for a in alerts] == ["prompt-reply mutual information collapsed", "grad norm spike"]
    assert "rollout/reply_mi 0.2" in alerts[0] and "losses/grad_norm_critic 4.5" in alerts[1]
    # a step that did not compute the signals records nothing for them
    m.update({"losses/grad_norm_critic": 1.0})
    assert len(m.history["rollout/reply_mi"]) == 5 and len(m.history["losses/grad_norm_critic"]) == 6


def test_config_chooses_what_is_watched():
    from ragen_train.trainer import collapse_monitor

    default = collapse_monitor(TrainConfig())
    assert default.drops == {"rollout/in_group_std": 0.1} and default.spikes == {"losses/grad_norm_actor": 10.0}
    every = collapse_monitor(TrainConfig(collapse_entropy_ratio=0.3, collapse_cond_entropy_ratio=0.2,
                                         collapse_mi_ratio=0.5, collapse_critic_grad_spike=8.0, collapse_std_ratio=0.0))
    assert every.drops == {"rollout/reply_entropy": 0.3, "rollout/reply_cond_entropy": 0.2, "rollout/reply_mi": 0.5}
    assert every.spikes == {"losses/grad_norm_actor": 10.0, "losses/grad_norm_critic": 8.0}
    with pytest.raises(ValueError, match="collapse_critic_grad_spike"):
        TrainConfig(collapse_critic_grad_spike=0.5)


def test_state_round_trip_old_checkpoints_and_bad_settings():
    m = CollapseMonitor(window=2)
    for s in (1.0, 1.0, 0.5):
        m.update(_row(s))
    fresh = CollapseMonitor(window=2)
    fresh.load_state_dict(m.state_dict())
    assert fresh.update(_row(0.01)) == m.update(_row(0.01))
    old = CollapseMonitor(window=2)  # a checkpoint written before the monitor read rows
    old.load_state_dict({"stds": [1.0, 1.0, 0.5], "grad_norms": [1.0, 1.0, 1.0]})
    assert old.history == {"rollout/in_group_std": [1.0, 1.0, 0.5], "losses/grad_norm_actor": [1.0, 1.0, 1.0]}
    with pytest.raises(ValueError):
        CollapseMonitor(window=0)
    with pytest.raises(ValueError):
        CollapseMonitor(spikes={"losses/grad_norm_actor": 1.0})


def test_steps_without_update_do_not_feed_the_grad_median():
    m = CollapseMonitor(window=2, spikes={"losses/grad_norm_actor": 5})
    for norm in (1.0, None, None, 1.0):
        assert m.update(_row(0.5, norm)) == []
    assert m.history["losses/grad_norm_actor"] == [1.0, 1.0] and len(m.history["rollout/in_group_std"]) == 4
    assert "spike" in m.update(_row(0.5, 6.0))[0]
