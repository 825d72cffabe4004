"""Collapse alerts fire on a dying reward spread and on grad-norm spikes, and not otherwise."""

from __future__ import annotations

import pytest

from ragen_train.collapse import CollapseMonitor


def test_spread_collapse_alert():
    m = CollapseMonitor(window=3, std_ratio=0.2, grad_spike=10)
    for s in (0.5, 0.4, 0.6, 0.3, 0.2):
        assert m.update(s, 1.0) == []  # fewer than 2 windows seen: no verdict yet
    assert m.early_std == pytest.approx(0.5)
    assert m.update(0.05, 1.0) == []  # last 3: mean 0.1833 >= 0.2 * 0.5
    alerts = m.update(0.04, 1.0)  # last 3: mean 0.0967 < 0.1
    assert len(alerts) == 1 and "spread collapsed" in alerts[0]


def test_grad_spike_alert_and_no_false_alarm():
    m = CollapseMonitor(window=3, std_ratio=0.1, grad_spike=5)
    assert m.update(0.5, 1.0) == [] and m.update(0.5, 2.0) == []
    assert m.update(0.5, 100.0) == []  # only 2 earlier norms: not enough history
    assert m.update(0.5, 9.9) == []  # median of (1, 2, 100) = 2; 9.9 < 10
    alerts = m.update(0.5, 20.0)  # median of (1, 2, 100, 9.9) = 5.95; 20 < 29.75: no alert
    assert alerts == []
    alerts = m.update(0.5, 200.0)  # median of (1, 2, 100, 9.9, 20) = 9.9; 200 > 49.5
    assert len(alerts) == 1 and "grad norm spike" in alerts[0]


def test_state_round_trip_and_bad_settings():
    m = CollapseMonitor(window=2)
    for s in (1.0, 1.0, 0.5):
        m.update(s, 1.0)
    fresh = CollapseMonitor(window=2)
    fresh.load_state_dict(m.state_dict())
    assert fresh.update(0.01, 1.0) == m.update(0.01, 1.0)
    with pytest.raises(ValueError):
        CollapseMonitor(window=0)


def test_steps_without_update_do_not_feed_the_grad_median():
    m = CollapseMonitor(window=2, grad_spike=5)
    for norm in (1.0, None, None, 1.0):
        assert m.update(0.5, norm) == []
    assert m.grad_norms == [1.0, 1.0] and len(m.stds) == 4
    assert "spike" in m.update(0.5, 6.0)[0]
