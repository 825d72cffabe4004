"""EvalConfig: env expansion, shards, backend choice, identity, round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_eval.config import DEFAULT_ENVS, EvalConfig, expand_envs, model_slug, parse_shard
from ragen_eval.run_dir import ConfigMismatchError, RunDir, load_run


def test_expand_envs_groups_lists_and_errors():
    assert expand_envs("default") == list(DEFAULT_ENVS)
    assert expand_envs("sokoban, ragen/FrozenLake-v0,sokoban") == ["sokoban", "frozenlake"]
    assert "boxoban_hard" in expand_envs("all")
    assert expand_envs("bandit_all") == ["bandit", "bandit_heldout", "bandit_reversed"]
    with pytest.raises(ValueError, match="unknown environment 'chess'"):
        expand_envs("sokoban,chess")
    with pytest.raises(ValueError, match="no environment"):
        expand_envs(" , ")


def test_parse_shard():
    assert parse_shard("1/4") == (1, 4)
    assert parse_shard(None) is None
    for bad in ("4/4", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(ValueError, match="shard"):
            parse_shard(bad)


@settings(deadline=None, max_examples=40)  # each config walks its split's levels once (~10 resets a seed)
@given(st.integers(1, 40), st.integers(1, 7), st.sampled_from([["bandit"], ["sokoban", "frozenlake"]]))
def test_shards_partition_the_work(episodes, n, envs):
    full = EvalConfig(model="random", envs=envs, episodes=episodes).work_items()
    shards = [EvalConfig(model="random", envs=envs, episodes=episodes, shard=(i, n)).work_items() for i in range(n)]
    flat = [item for shard in shards for item in shard]
    assert sorted(flat) == sorted(full)
    assert len(flat) == len(set(flat)) == len(envs) * episodes


def test_seeds_come_from_the_named_split():
    config = EvalConfig(model="random", envs=["bandit"], episodes=3, split="test", seed_start=5)
    assert config.seeds("bandit") == [200_000_005, 200_000_006, 200_000_007]  # one shared level: the range
    val = EvalConfig(model="random", episodes=2, split="val")
    assert val.seeds("bandit") == [100_000_000, 100_000_001]
    # the other games keep only the seeds whose levels belong to the split, per env and its overrides
    from ragen_envs import split_seeds

    assert val.seeds("sokoban") == split_seeds("val", 2, env="sokoban") != [100_000_000, 100_000_001]
    lake = EvalConfig(model="random", envs=["frozenlake"], episodes=4, env_configs={"frozenlake": {"height": 5}})
    assert lake.work_items() == [("frozenlake", s) for s in split_seeds("test", 4, env="frozenlake",
                                                                       env_config={"height": 5})]


def test_backend_resolution_and_validation():
    assert EvalConfig(model="oracle").resolved_backend() == "builtin"
    assert EvalConfig(model="gpt-x", base_urls=["http://h/v1"]).resolved_backend() == "openai"
    assert EvalConfig(model="oracle", local_server=True).resolved_backend() == "openai"
    assert EvalConfig(model="/ckpt", backend="hf").resolved_backend() == "hf"
    with pytest.raises(ValueError, match="--base-url"):
        EvalConfig(model="gpt-x")
    with pytest.raises(ValueError, match="builtin backend"):
        EvalConfig(model="gpt-x", backend="builtin")
    with pytest.raises(ValueError, match="--episodes"):
        EvalConfig(model="random", episodes=0)
    with pytest.raises(ValueError, match="unknown split"):
        EvalConfig(model="random", split="dev")
    with pytest.raises(ValueError, match="env_configs"):
        EvalConfig(model="random", envs=["bandit"], env_configs={"sokoban": {"num_boxes": 2}})
    with pytest.raises(ValueError, match="--local-server"):
        EvalConfig(model="random", local_server=True, base_urls=["http://h/v1"])


def test_round_trip_and_identity_ignore_transport_settings():
    config = EvalConfig(model="m", base_urls=["http://a/v1"], envs="sokoban,bandit", episodes=8, shard=(1, 2),
                        protocol={"observation_format": "coords"})
    again = EvalConfig.from_dict(config.to_dict())
    assert again.to_dict() == config.to_dict()
    faster = EvalConfig.from_dict({**config.to_dict(), "concurrency": 128, "base_urls": ["http://b/v1"],
                                   "timeout": 5.0, "max_retries": 0})
    assert faster.identity() == config.identity()
    hotter = EvalConfig.from_dict({**config.to_dict(), "sampling": {**config.sampling.to_dict(), "temperature": 1.0}})
    assert hotter.identity() != config.identity()
    with pytest.raises(ValueError, match="unknown EvalConfig fields"):
        EvalConfig.from_dict({**config.to_dict(), "api_key": "sk-secret"})


def test_no_secret_in_serialised_config(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-very-secret")
    config = EvalConfig(model="m", base_urls=["https://user:sk-very-secret@host/v1?key=sk-very-secret"],
                        api_key_env="MY_KEY")
    text = str(config.to_dict())
    assert "sk-very-secret" not in text
    assert "MY_KEY" in text


TOKEN = "hf_0123456789abcdefSECRET"
REVISION = "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffee0123"  # a pinned commit: key-like, yet it decides results


def _hub_model(**model_args) -> EvalConfig:
    return EvalConfig(model="org/model", backend="hf", envs=["bandit"], episodes=2, model_args=model_args)


def test_model_args_are_stored_without_secrets_and_resume_on_the_same_or_another_token(tmp_path):
    config = _hub_model(hf_token=TOKEN, revision=REVISION, hfOverrides={"apiKey": "x", "note": f"Bearer {TOKEN}"},
                        max_num_batched_tokens=512, tokenizer="org/tok")
    assert config.to_dict()["model_args"] == {"hf_token": "***", "revision": REVISION,
                                              "hfOverrides": {"apiKey": "***", "note": "***"},
                                              "max_num_batched_tokens": 512, "tokenizer": "org/tok"}
    with RunDir(tmp_path, config) as run:
        run.append({"env": "bandit", "seed": config.seeds("bandit")[0], "success": True, "turns": []})
    assert all(TOKEN not in path.read_text() for path in tmp_path.iterdir() if path.is_file())
    stored, _ = load_run(tmp_path)  # what show, judge and merge read back
    assert stored.identity() == config.identity()
    for same in (config, _hub_model(hf_token="hf_another0123456789token", revision=REVISION,
                                    hfOverrides={"apiKey": "y", "note": "Bearer sk-other-0123456789"},
                                    max_num_batched_tokens=512, tokenizer="org/tok"), stored):
        with RunDir(tmp_path, same) as run:
            assert len(run.done) == 1
    # What does decide results still tells runs apart.
    with pytest.raises(ConfigMismatchError, match=f"model_args.revision: '{REVISION}' -> 'main'"):
        with RunDir(tmp_path, _hub_model(hf_token=TOKEN, revision="main")):
            pass


def test_run_names():
    assert EvalConfig(model="random").run_name() == "random__builtin__test"
    assert EvalConfig(model="org/model:7b", base_urls=["http://h/v1"], shard=(0, 3)).run_name() == \
        "org--model-7b__openai__test__shard-0-of-3"
    assert model_slug("/nonexistent/but/a/path") == "nonexistent--but--a--path"
