"""TRL's GRPOTrainer plays the games by tool calls through ``environment_factory`` (:class:`GameToolEnv`).

The trainer test is TRL's own loop end to end (prompt with the tool schema, generation, tool-call parsing,
the tool run on our environment, ``get_reward``, the GRPO update) on the tiny local model; only what the
model writes is scripted, so that every group holds a good arm, a bad arm, an unknown action and a reply
with no tool call, and each reward can be checked against the same actions played in process.
"""

from __future__ import annotations

import copy
import re

import pytest

from ragen_envs.text import TextEpisode, replay
from ragen_envs.text.parser import format_reply
from ragen_train.trl_tools import SEED_COLUMN, TOOL_PROTOCOL, GameToolEnv, tool_dataset, tool_protocol

pytestmark = pytest.mark.train


def _in_process(env, seed, turns, protocol=None):
    """The episode's total reward when each turn's actions are sent as a well-formed reply, and the
    turns left unplayed as empty replies: what the tool path promises to equal."""
    episode = TextEpisode(env, seed, tool_protocol(protocol))
    for actions in turns:
        if episode.done:
            break
        episode.step(format_reply(actions, episode.config.action_separator,
                                  thought="" if episode.config.think else None))
    while not episode.done:
        episode.step("")
    return episode.total_reward


@pytest.mark.parametrize("env", ["bandit", "simple_sokoban", "frozenlake"])
def test_tool_calls_score_as_in_process_play(env):
    # Random action lists (valid names, aliases in other cases, unknown names, too many for a turn), then a
    # rollout that stops calling early: the environment's reward equals in-process play, seed by seed.
    import numpy as np

    rng = np.random.default_rng(0)
    for seed in range(12):
        tool_env = GameToolEnv.factory(env)()
        first = tool_env.reset(**{SEED_COLUMN: seed, "prompt": "ignored: TRL passes the whole row"})
        assert first == TextEpisode(env, seed, tool_protocol()).messages[-1]["content"]
        assert "Call act." in first and "<answer>" not in first
        names = list(tool_env.episode.game.action_names) + ["UP", "left", "Unicorn"]
        turns = []
        for _ in range(int(rng.integers(0, 4))):
            if tool_env.episode.done:
                break
            actions = [str(a) for a in rng.choice(names, size=int(rng.integers(0, 7)))]
            answer = tool_env.act(actions)
            turns.append(actions)
            if tool_env.episode.done:
                assert answer.startswith("The episode is over")
                with pytest.raises(ValueError, match="episode is over"):
                    tool_env.act(actions)
            else:
                assert answer == tool_env.episode.messages[-1]["content"]
        reward = tool_env.get_reward()
        assert reward == pytest.approx(_in_process(env, seed, turns))
        assert reward == pytest.approx(replay(tool_env.record).total_reward)
        assert tool_env.get_reward() == reward  # TRL calls it once; a second call changes nothing


def test_bad_settings_and_rows_fail_clearly():
    with pytest.raises(ValueError, match="unknown environment"):
        GameToolEnv.factory("no_such_game")
    with pytest.raises(ValueError, match=SEED_COLUMN):
        GameToolEnv().reset(prompt=[])
    with pytest.raises(RuntimeError, match="reset"):
        GameToolEnv().act(["Up"])
    # The caller's protocol wins over the tool defaults; the dataset carries its system message.
    assert tool_protocol({"max_turns": 2, "turn_template": "{observation}"})["turn_template"] == "{observation}"
    assert tool_protocol()["format_think"] == TOOL_PROTOCOL["format_think"]
    rows = tool_dataset([4, 5], protocol={"system_prompt": "Play well."})
    assert rows[1] == {"prompt": [{"role": "system", "content": "Play well."}, {"role": "user", "content": ""}],
                       SEED_COLUMN: 5}


# Per group of four rollouts: the first listed arm, the second, an unknown name, no tool call at all.
def _scripted_reply(prompt_text: str, member: int) -> tuple[str, list[str] | None]:
    arms = re.findall(r"Valid actions: ([^.]*)\.", prompt_text)[-1].split(", ")
    if member == 3:
        return "I would rather not play.", None
    actions = [arms[0], arms[1], "Unicorn"][member]
    return f'<tool_call>\n{{"name": "act", "arguments": {{"actions": ["{actions}"]}}}}\n</tool_call>', [actions]


@pytest.mark.slow
def test_two_grpo_steps_play_by_tool_calls_and_score_as_in_process(tiny_model_dir, tmp_path, monkeypatch):
    trl = pytest.importorskip("trl")
    torch = pytest.importorskip("torch")
    datasets = pytest.importorskip("datasets")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ragen_train.trl_tools import with_tool_template

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer = with_tool_template(AutoTokenizer.from_pretrained(tiny_model_dir))
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    eos, pad = tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.pad_token_id
    scripted = []  # (seed-free prompt text, actions) per first reply, in generation order

    def generate(input_ids, attention_mask=None, **kwargs):
        tails = []
        for row, ids in enumerate(input_ids.tolist()):
            text = tokenizer.decode(ids, skip_special_tokens=False)
            if text.rstrip().endswith("</tool_response><|im_end|>\n<|im_start|>assistant"):
                reply = "Done."  # after the tool's answer the turn ends
            else:
                reply, actions = _scripted_reply(text, row % 4)
                scripted.append(actions)
            tails.append(tokenizer(reply, add_special_tokens=False)["input_ids"] + [eos])
        width = max(len(t) for t in tails)
        tails = torch.tensor([t + [pad] * (width - len(t)) for t in tails])
        return torch.cat([input_ids, tails], dim=1)

    monkeypatch.setattr(model, "generate", generate)
    scored = []

    class RecordingGameToolEnv(GameToolEnv):
        def get_reward(self):
            reward = super().get_reward()
            scored.append((reward, self.record))
            return reward

    seeds = list(range(40, 44))
    config = trl.GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=8, num_generations=4,
        max_completion_length=96, max_tool_calling_iterations=2, learning_rate=1e-2, beta=0.0, logging_steps=1,
        save_strategy="no", report_to="none", use_cpu=True, seed=0, dataloader_num_workers=0,
        shuffle_dataset=False,
    )
    trainer = trl.GRPOTrainer(model=model, args=config, processing_class=tokenizer,
                              train_dataset=datasets.Dataset.from_list(tool_dataset(seeds)),
                              environment_factory=RecordingGameToolEnv.factory("bandit"))
    before = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
    trainer.train()

    assert len(scored) == 16 and len(scripted) == 16
    for (reward, record), actions in zip(scored, scripted, strict=True):
        # TRL parsed the call, ran act() with its arguments, and read the reward from the environment:
        # equal to the same actions played in process, and to a replay of the record.
        assert record["seed"] in seeds
        assert reward == pytest.approx(_in_process("bandit", record["seed"], [actions] if actions else []))
        assert reward == pytest.approx(replay(record).total_reward)
        assert record["turns"][0]["format_ok"] == (actions is not None and actions[0] != "Unicorn")
    logged = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert [e["reward"] for e in logged] == pytest.approx(
        [sum(r for r, _ in scored[i * 8:(i + 1) * 8]) / 8 for i in range(2)], abs=1e-6)
    assert all(e["tools/call_frequency"] > 0 for e in logged)
    # The groups' rewards differ, so GRPO had a signal: every trainable tensor moved.
    unchanged = [name for name, p in model.named_parameters() if p.requires_grad and torch.equal(p, before[name])]
    assert not unchanged
