"""The reasoning reward: hand-written replies on real game turns get the terms worked out by hand, the
rollout adds them to the turn's reward, and a training step with them on logs their mean."""

from __future__ import annotations

import json

import pytest

from ragen_envs.text import TextEpisode
from ragen_train.reasoning_reward import ReasoningTerms, reasoning_terms


def _turn(env: str, think: str | None, answer: str, seed: int = 3, protocol: dict | None = None) -> tuple[dict, dict]:
    """(turn record, state before) of a first turn that replies ``think`` + ``answer``."""
    episode = TextEpisode(env, seed, protocol)
    state = episode.game.state_dict()
    reply = (f"<think>{think}</think>" if think is not None else "") + f"<answer>{answer}</answer>"
    return episode.step(reply), state


def _floor_cell(state: dict) -> tuple[int, int]:
    """A floor cell of the Sokoban ``state`` that holds no player, box or target."""
    taken = {tuple(c) for c in state["walls"] + state["boxes"] + state["targets"] + [state["player"]]}
    return next((r, c) for r in range(state["height"]) for c in range(state["width"]) if (r, c) not in taken)


COEFS = {"format_coef": 0.25, "consistency_coef": 2.0}


def test_true_claims_earn_the_coefficient_and_false_ones_cost_it():
    _, state = _turn("simple_sokoban", "", "Up")
    (pr, pc), (br, bc), (fr, fc) = state["player"], state["boxes"][0], _floor_cell(state)

    true, _ = _turn("simple_sokoban", f"I am at ({pr}, {pc}). The box is at ({br}, {bc}).", "Up")
    assert reasoning_terms(true, **COEFS) == ReasoningTerms(format=0.25, consistency=2.0)

    false, _ = _turn("simple_sokoban", f"I am at ({fr}, {fc}).", "Up")
    assert reasoning_terms(false, **COEFS) == ReasoningTerms(format=0.25, consistency=-2.0)

    # two true claims and one false one: 2.0 x (2 - 1) / 3
    mixed, _ = _turn("simple_sokoban", f"I am at ({pr}, {pc}). The box is at ({br}, {bc}). "
                                        f"The target is at ({fr}, {fc}).", "Up")
    assert reasoning_terms(mixed, **COEFS).consistency == pytest.approx(2.0 / 3)
    assert reasoning_terms(mixed, **COEFS).total == pytest.approx(0.25 + 2.0 / 3)


def test_no_thought_earns_nothing_and_a_thought_without_claims_only_the_format_term():
    empty, state = _turn("simple_sokoban", "", "Up")
    assert reasoning_terms(empty, **COEFS) == ReasoningTerms(0.0, 0.0)
    missing, _ = _turn("simple_sokoban", None, "Up")  # no <think> at all: a format error too
    assert not missing["format_ok"]
    assert reasoning_terms(missing, **COEFS) == ReasoningTerms(0.0, 0.0)
    vague, _ = _turn("simple_sokoban", "Let me think about the puzzle carefully.", "Up")
    assert reasoning_terms(vague, **COEFS) == ReasoningTerms(0.25, 0.0)
    # a true claim in a reply that breaks the format: no format term, the claim still counts
    pr, pc = state["player"]
    broken, _ = _turn("simple_sokoban", f"I am at ({pr}, {pc}).", "Jump")
    assert not broken["format_ok"]
    assert reasoning_terms(broken, **COEFS) == ReasoningTerms(0.0, 2.0)


def test_terms_are_off_at_zero_and_bandit_claims_are_checked_against_the_arms():
    true, state = _turn("bandit", "Dragon pays more on average.", "Dragon")
    false, _ = _turn("bandit", "Phoenix pays more on average.", "Phoenix")
    means = {arm["name"]: arm["expected_reward"] for arm in state["arms"]}
    assert means["Dragon"] > means["Phoenix"]  # what makes the first claim true
    assert reasoning_terms(true, consistency_coef=1.0) == ReasoningTerms(0.0, 1.0)
    assert reasoning_terms(false, consistency_coef=1.0) == ReasoningTerms(0.0, -1.0)
    assert reasoning_terms(true) == ReasoningTerms(0.0, 0.0)


def test_cells_are_read_in_the_prompts_coordinate_base():
    _, state = _turn("frozenlake", "", "Left", protocol={"coordinate_base": 1})
    r, c = state["player"]
    one_based, _ = _turn("frozenlake", f"I am at ({r + 1}, {c + 1}).", "Left", protocol={"coordinate_base": 1})
    assert reasoning_terms(one_based, consistency_coef=1.0, coordinate_base=1).consistency == 1.0
    # the same text read as 0-based names another cell: the base the prompt declared decides
    assert reasoning_terms(one_based, consistency_coef=1.0, coordinate_base=0).consistency == -1.0


# --- in the rollout and the trainer ---------------------------------------------------------------

TRUE_REPLY = "<think>Dragon pays more on average.</think><answer>Dragon</answer>"
FALSE_REPLY = "<think>Phoenix pays more on average.</think><answer>Phoenix</answer>"


class ScriptedEngine:
    """A rollout engine that answers the i-th prompt of every call with ``replies[i % len(replies)]``."""

    def __init__(self, tokenizer, replies):
        self.replies = [tokenizer(r, add_special_tokens=False)["input_ids"] for r in replies]

    def generate(self, prompts, *, stop_ids, **_):
        return [self.replies[i % len(self.replies)] + [stop_ids[0]] for i in range(len(prompts))]

    def load_weights(self, lm):
        pass

    def close(self):
        pass


def test_rollout_adds_the_terms_to_the_turn_reward_and_the_episode_reward(tiny_model_dir):
    transformers = pytest.importorskip("transformers")
    from ragen_train.policy import load_tokenizer
    from ragen_train.rollout import rollout

    tokenizer = load_tokenizer(tiny_model_dir)
    lm = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    engine = ScriptedEngine(tokenizer, [TRUE_REPLY, FALSE_REPLY])
    kwargs = {"group_size": 2, "engine": engine, "max_new_tokens": 32}
    plain = rollout(lm, tokenizer, "bandit", [5, 9], **kwargs)
    shaped = rollout(lm, tokenizer, "bandit", [5, 9], reasoning_format=0.5, reasoning_consistency=1.0, **kwargs)
    for a, b in zip(plain.trajectories, shaped.trajectories, strict=True):
        truthful = a.record["turns"][0]["response"] == TRUE_REPLY
        extra = 0.5 + (1.0 if truthful else -1.0)
        assert a.reasoning_reward == 0.0 and b.reasoning_reward == extra
        assert b.record == a.record  # the episode record stays the game's
        assert b.episode_reward == pytest.approx(a.episode_reward + extra)
        assert sum(b.rewards) == pytest.approx(sum(a.rewards) + extra)  # on the turn's last sampled token
        assert b.input_ids == a.input_ids and b.loss_mask == a.loss_mask
    assert (shaped.group_rewards() - plain.group_rewards()).tolist() == [[1.5, -0.5], [1.5, -0.5]]


@pytest.mark.slow
def test_a_training_step_with_the_reasoning_reward_logs_its_mean(tiny_model_dir, tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from ragen_train import trainer
    from ragen_train.config import load_config
    from ragen_train.policy import load_tokenizer

    tokenizer = load_tokenizer(tiny_model_dir)
    monkeypatch.setattr(trainer, "open_rollout_engine",
                        lambda *a, **k: ScriptedEngine(tokenizer, [TRUE_REPLY, TRUE_REPLY, FALSE_REPLY]))
    common = [f"model={tiny_model_dir}", f"output_dir={tmp_path}", "env=bandit", "env_groups=2", "group_size=3",
              "max_new_tokens=32", "micro_batch_size=2", "actor_lr=1e-3", "critic_lr=1e-3", "plot_every=0",
              "total_steps=1", "rollout_filter_ratio=1.0",
              "advantage_estimator=grpo", "critic=none"]
    on = trainer.train(load_config(None, [*common, "run_name=on", "reasoning_reward_format=0.5",
                                          "reasoning_reward_consistency=1.0"]))
    off = trainer.train(load_config(None, [*common, "run_name=off"]))
    row = json.loads((on / "metrics.jsonl").read_text())
    base = json.loads((off / "metrics.jsonl").read_text())
    # per group two true replies (0.5 + 1) and one false (0.5 - 1): mean (1.5 + 1.5 - 0.5) / 3
    assert row["rollout/reasoning_reward"] == pytest.approx(2.5 / 3)
    assert "rollout/reasoning_reward" not in base
    assert row["rollout/claim_accuracy"] == pytest.approx(2 / 3) and row["rollout/think_words_per_turn"] == 5
    assert row["rollout/mean_reward"] == base["rollout/mean_reward"]  # the game's reward, unshaped
    # the spread the filter and the critic see now includes the reasoning reward
    assert row["rollout/in_group_std"] > base["rollout/in_group_std"]
    assert row["losses/policy_loss"] == row["losses/policy_loss"] and row["losses/grad_norm_actor"] > 0


@pytest.mark.parametrize("field", ["reasoning_reward_format", "reasoning_reward_consistency"])
def test_a_negative_or_missing_coefficient_is_refused_by_name(field):
    from ragen_train.config import TrainConfig

    assert not TrainConfig().uses_reasoning_reward and TrainConfig(**{field: 0.1}).uses_reasoning_reward
    for bad in (-0.1, float("nan")):
        with pytest.raises(ValueError, match=field):
            TrainConfig(**{field: bad})
