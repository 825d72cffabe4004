"""The OpenEnv door, end to end: a real ``python -m ragen_envs.openenv_server`` on loopback, played by
OpenEnv's own client (``GenericEnvClient``) and checked by OpenEnv's own ``openenv validate``.

Runs in the ``openenv`` install profile (scripts/smoke_profiles.sh); skipped where the extra is absent.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("openenv")
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from websockets.exceptions import InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from ragen_envs import PRESETS  # noqa: E402
from ragen_envs.splits import LevelSplitter  # noqa: E402
from ragen_envs.text.episode import TextEpisode  # noqa: E402
from ragen_envs.text.parser import format_reply  # noqa: E402

# Each test starts a real server process (several seconds on a busy machine).
pytestmark = pytest.mark.slow

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "ragen_envs" / "openenv_server"
OPENENV = str(Path(sys.executable).with_name("openenv"))


@contextmanager
def serve(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """A server subprocess on a free loopback port; yields its base URL and stops it afterwards."""
    proc = subprocess.Popen([sys.executable, "-m", "ragen_envs.openenv_server", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    try:
        line = proc.stdout.readline()
        assert "listening on" in line, proc.stderr.read()
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/ws"


def exchange(socket, kind: str, data: dict | None = None) -> dict:
    """One OpenEnv WebSocket message and its answer, raw (so errors are seen as sent)."""
    socket.send(json.dumps({"type": kind, **({} if data is None else {"data": data})}))
    return json.loads(socket.recv(timeout=30))


# Replies of every kind a model (or a careless client) sends: valid, misspelt, malformed, empty, long.
def scripted_turns(env: str, seed: int) -> list[dict]:
    """Up to five actions (OpenEnv action dicts) for one episode, fixed by its seed."""
    names = {"bandit": ["Phoenix", "Dragon"], "frozenlake": ["Left", "Down", "Right", "Up"],
             "simple_sokoban": ["Up", "Down", "Left", "Right"]}[env]
    rng = random.Random(f"{env}:{seed}")
    turns = []
    for _ in range(5):
        picked = rng.sample(names, k=min(len(names), rng.randint(1, 3)))
        kind = rng.choice(["reply", "reply", "message", "actions", "misspelt", "malformed"])
        if kind == "actions":
            turns.append({"actions": picked})
        elif kind == "misspelt":
            turns.append({"reply": f"<think>try</think><answer>{picked[0].lower()}x || {picked[-1]}</answer>"})
        elif kind == "malformed":
            turns.append({"reply": rng.choice(["", "Up Up", "<answer>Up</answer><think>late</think>", "x" * 300])})
        else:
            turns.append({kind: f"<think>step {len(turns)}</think><answer>{' || '.join(picked)}</answer>"})
    return turns


def in_process(env: str, seed: int, turns: list[dict], protocol: dict | None = None,
               env_config: dict | None = None) -> tuple[list[dict], dict]:
    """The same episode played by ``TextEpisode``: per-step (messages, reward) and the final record."""
    episode = TextEpisode(env, seed, protocol, env_config)
    steps = []
    for action in turns:
        if episode.done:
            break
        if "actions" in action:
            reply = format_reply(action["actions"], episode.config.action_separator, thought="")
        else:
            reply = action.get("reply", action.get("message"))
        turn = episode.step(reply)
        steps.append({"messages": episode.messages, "reward": turn["reward"] + turn["penalty"]})
    record = episode.record()
    record["certificate"] = None
    return json.loads(json.dumps(steps)), json.loads(json.dumps(record))


async def play_remote(url: str, env: str, seed: int, turns: list[dict],
                      **reset: object) -> tuple[list[dict], dict, dict]:
    """One episode over OpenEnv's client: per-step (messages, reward), the episode record, the reset's
    observation. With chat "new" the chat is kept as a trainer keeps it: the reply as the server played it
    (the turn record's ``response``), then the step's messages."""
    async with GenericEnvClient(base_url=url) as client:
        first = await client.reset(env=env, seed=seed, records=True, **reset)
        steps, result = [], first
        chat = list(first.observation["messages"])
        for action in turns:
            if result.done:
                break
            result = await client.step(action)
            observation = result.observation
            if observation["chat"] == "new":
                chat += [{"role": "assistant", "content": observation["turn"]["response"]}, *observation["messages"]]
            else:
                chat = observation["messages"]
            steps.append({"messages": list(chat), "reward": result.reward})
        return steps, result.observation["record"], first.observation


def test_openenv_client_plays_200_concurrent_episodes_equal_to_in_process_play() -> None:
    games = [(env, seed) for seed in range(70) for env in ("bandit", "frozenlake", "simple_sokoban")][:200]
    with serve("--max-sessions", "200", "--max-sessions-per-client", "200") as url:
        async def all_episodes():
            # Every other episode asks for the whole chat each turn; the rest rebuild it from the new messages.
            return await asyncio.gather(*(play_remote(url, env, seed, scripted_turns(env, seed),
                                                      **({"chat": "full"} if i % 2 else {}))
                                          for i, (env, seed) in enumerate(games)))

        results = asyncio.run(all_episodes())
    assert len(results) == 200
    kinds = set()
    for i, ((env, seed), (steps, record, first)) in enumerate(zip(games, results)):
        turns = scripted_turns(env, seed)
        kinds.update(next(iter(action)) for action in turns)
        want_steps, want_record = in_process(env, seed, turns)
        assert first["chat"] == ("full" if i % 2 else "new")
        assert steps == want_steps, (env, seed)
        assert record == want_record, (env, seed)
        assert first["certificate"] is None and first["info"]["seed"] == seed
    assert kinds == {"reply", "message", "actions"}


def test_new_messages_rebuild_the_whole_chat_of_every_game() -> None:
    """The default observation (chat "new", no records), as a trainer uses it: the reset's messages are
    the prompt; after each reply the client appends its reply and the step's messages. The chat so kept
    equals the whole chat (``chat="full"``, and ``TextEpisode.messages``) after every turn, in every
    game, image presets included; ``text`` is the newest user turn's text."""
    from ragen_envs.registration import PRESETS
    from ragen_envs.text.episode import content_text

    names = [preset.name for preset in PRESETS]
    replies = ["<think>a</think><answer>{0} || {1}</answer>", "no tags", "<think>b</think><answer>{1}</answer>",
               "<think>c</think><answer>{0}</answer>", "<answer>{1}</answer><think>late</think>"]
    with serve() as url, connect(ws_url(url), max_size=None) as new, connect(ws_url(url), max_size=None) as full:
        for env in names:
            for seed in (1, 2):
                episode = TextEpisode(env, seed)
                first = exchange(new, "reset", {"env": env, "seed": seed})["data"]
                whole = exchange(full, "reset", {"env": env, "seed": seed, "chat": "full"})["data"]
                assert first["observation"]["chat"] == "new" and whole["observation"]["chat"] == "full"
                chat = first["observation"]["messages"]
                assert chat == whole["observation"]["messages"] == json.loads(json.dumps(episode.messages))
                names_ = episode.game.action_names
                for template in replies:
                    if episode.done:
                        break
                    reply = template.format(names_[0], names_[-1])
                    episode.step(reply)
                    step = exchange(new, "step", {"reply": reply})["data"]
                    observation = step["observation"]
                    assert observation["turn"] is None and observation["record"] is None
                    chat = chat + [{"role": "assistant", "content": reply}] + observation["messages"]
                    want = json.loads(json.dumps(episode.messages))
                    assert chat == want == exchange(full, "step", {"reply": reply})["data"]["observation"]["messages"]
                    assert observation["text"] == (None if episode.done else content_text(want[-1]["content"]))
                    assert len(observation["messages"]) == (0 if episode.done else 1), (env, seed)


def test_reset_defaults_reveal_flag_and_bad_requests() -> None:
    with serve("--env", "frozenlake") as url, connect(ws_url(url)) as socket:
        reset = exchange(socket, "reset", {"seed": 7})["data"]
        assert reset["observation"]["info"]["env"] == "frozenlake" and reset["reward"] == 0.0
        assert reset["observation"]["messages"] == TextEpisode("frozenlake", 7).messages
        assert reset["observation"]["certificate"] is None
        # /metadata carries one environment card per registered preset.
        with urllib.request.urlopen(url + "/metadata", timeout=30) as answer:
            cards = json.loads(answer.read())["readme_content"]
        names = [line.split(" ")[1] for line in cards.splitlines() if line.startswith("### ")]
        assert names == [preset.name for preset in PRESETS]
        # A card says the splits share their levels only where they do; elsewhere the leak is 0 (or unmeasured).
        leaks = [line.rsplit(": ", 1)[1] for line in cards.splitlines() if line.startswith("- split leak")]
        for name, leak in zip(names, leaks, strict=True):
            assert leak.startswith("none to hold out") if LevelSplitter(name).shared else leak in ("0", "not measured"), \
                (name, leak)
        two = exchange(socket, "step", {"reply": "a", "actions": ["Up"]})
        assert two["type"] == "error" and "exactly one" in two["data"]["message"]
        huge = exchange(socket, "step", {"reply": "x" * 70_000})
        assert huge["type"] == "error" and huge["data"]["code"] == "VALIDATION_ERROR"
        # The session survived both refusals and still plays its episode.
        assert exchange(socket, "step", {"actions": ["Up"]})["data"]["observation"]["info"]["turn"] == 1
        unknown = exchange(socket, "reset", {"seed": 1, "difficulty": 3})
        assert unknown["type"] == "error" and "difficulty" in unknown["data"]["message"]
        for bad, words in [({"chat": "delta"}, "chat must be"), ({"records": "yes"}, "records must be"),
                           ({"chat": "new", "protocol": {"context": "single"}}, "needs context 'full'")]:
            refused = exchange(socket, "reset", {"seed": 1, **bad})
            assert refused["type"] == "error" and words in refused["data"]["message"], refused
        # A sliding context rewrites the chat every turn: the whole window comes each time.
        single = exchange(socket, "reset", {"seed": 1, "protocol": {"context": "single"}})["data"]["observation"]
        assert single["chat"] == "full"
        stepped = exchange(socket, "step", {"actions": ["Up"]})["data"]["observation"]
        episode = TextEpisode("frozenlake", 1, {"context": "single"})
        episode.step(format_reply(["Up"], episode.config.action_separator, thought=""))
        assert stepped["messages"] == episode.messages
    with serve("--env", "sokoban", "--reveal-certificate") as url, connect(ws_url(url)) as socket:
        reset = exchange(socket, "reset", {"seed": 5})["data"]["observation"]
        assert reset["certificate"] == json.loads(json.dumps(TextEpisode("sokoban", 5).certificate))
        assert reset["certificate"]["optimal_actions"]


def post(url: str, path: str, body: dict) -> tuple[int, dict]:
    """(status, JSON body) of one plain HTTP POST."""
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_refusals_on_the_http_routes_keep_their_status() -> None:
    # Every one of these was a bare 500 with a traceback on the server's stderr.
    with serve("--env", "bandit") as url:
        for body, status, words in [({"env": "nope"}, 400, "unknown environment"),
                                    ({"env_config": {"num_arms": 10**6}}, 403, "not open to clients"),
                                    ({"env": "sokoban", "levels": "/etc/passwd"}, 400, "not a path"),
                                    ({"bogus": 1}, 400, "unknown reset argument")]:
            got, answer = post(url, "/reset", body)
            assert (got, words in answer["error"]) == (status, True), (body, answer)
        got, answer = post(url, "/step", {"action": {"reply": "x"}})
        assert got == 409 and "send reset first" in answer["error"]
        assert post(url, "/reset", {"seed": 3})[0] == 200


def _client_process(url: str) -> subprocess.Popen:
    """A separate client process that opens a session, plays a turn, reports, and then hangs mid-episode."""
    code = (f"from websockets.sync.client import connect; import json, time\n"
            f"s = connect({ws_url(url)!r}); s.send(json.dumps({{'type': 'reset', 'data': {{'seed': 3}}}}));"
            f"s.recv(); s.send(json.dumps({{'type': 'step', 'data': {{'actions': ['Up']}}}})); s.recv()\n"
            f"print('mid-episode', flush=True); time.sleep(600)\n")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_capacity_error_and_no_slot_leaked_by_killed_clients() -> None:
    capacity = 6
    with serve("--env", "bandit", "--max-sessions", str(capacity)) as url:
        clients = [_client_process(url) for _ in range(capacity)]
        try:
            assert all(c.stdout.readline().strip() == "mid-episode" for c in clients)
            with connect(ws_url(url)) as extra:  # refused on arrival, before any message
                refused = json.loads(extra.recv(timeout=30))
            assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"
        finally:
            for c in clients:
                c.kill()
                c.wait()
        # Every killed client's session is torn down: the full capacity opens again, twice over.
        for _ in range(2):
            deadline = time.monotonic() + 10
            while True:
                sockets = [connect(ws_url(url)) for _ in range(capacity)]
                answers = [exchange(s, "reset", {"seed": i}) for i, s in enumerate(sockets)]
                for s in sockets:
                    s.close()
                if all(a["type"] == "observation" for a in answers) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert [a["type"] for a in answers] == ["observation"] * capacity


def test_idle_session_is_closed_and_its_slot_freed() -> None:
    with serve("--env", "bandit", "--max-sessions", "2", "--idle-timeout", "1") as url:
        with connect(ws_url(url)) as busy:  # a message every 0.4 s for 2.8 s: never idle for 1 s
            assert exchange(busy, "reset", {"seed": 1})["type"] == "observation"
            for _ in range(7):
                time.sleep(0.4)
                assert exchange(busy, "state")["type"] == "state"
    with serve("--env", "bandit", "--max-sessions", "1", "--idle-timeout", "1") as url:
        with connect(ws_url(url)) as idle:
            assert exchange(idle, "reset", {"seed": 1})["type"] == "observation"
            time.sleep(2.5)
            with pytest.raises(Exception):
                exchange(idle, "step", {"actions": ["Phoenix"]})
        with connect(ws_url(url)) as fresh:
            assert exchange(fresh, "reset", {"seed": 2})["type"] == "observation"


def test_client_policy_applies_over_ws(tmp_path: Path) -> None:
    levels = tmp_path / "levels"
    levels.mkdir()
    (levels / "two.txt").write_text("#####\n#@$.#\n#####\n\n######\n#@ $.#\n######\n")
    (tmp_path / "outside.txt").write_text("#####\n#@$.#\n#####\n")
    with serve("--levels-dir", str(levels), "--max-sessions-per-client", "2") as url:
        with connect(ws_url(url)) as one, connect(ws_url(url)) as two:
            served = exchange(one, "reset", {"env": "sokoban", "levels": "two.txt", "seed": 1})
            assert served["type"] == "observation", served
            for bad in ("../outside.txt", str(tmp_path / "outside.txt"), "missing.txt"):
                refused = exchange(two, "reset", {"env": "sokoban", "levels": bad})
                assert refused["type"] == "error", bad
            override = exchange(two, "reset", {"env": "sokoban", "env_config": {"num_boxes": 9}})
            assert override["type"] == "error"
            with pytest.raises(InvalidStatus) as third:
                connect(ws_url(url))
            assert third.value.response.status_code == 429


def test_reset_arguments_pick_protocol_env_config_and_level_file(tmp_path: Path) -> None:
    # One session, three episodes: the protocol and an opened env_config field as reset arguments, then a level
    # of an operator's level file by name; each plays as TextEpisode does with the same arguments.
    levels = tmp_path / "levels"
    levels.mkdir()
    (levels / "two.txt").write_text("#####\n#@$.#\n#####\n\n######\n#@ $.#\n######\n")
    protocol = {"max_turns": 2, "format_penalty": -0.5}
    turns = [{"reply": "<think>go</think><answer>Down || Right</answer>"}, {"message": "no tags"},
             {"actions": ["Right"]}]
    asked = [{"env": "frozenlake", "seed": 5, "protocol": protocol, "env_config": {"height": 5, "width": 5}},
             {"env": "bandit", "seed": 2, "protocol": {"format_penalty": -0.3}},
             {"env": "sokoban", "seed": 1, "levels": "two.txt", "protocol": protocol}]
    played = []
    with serve("--allow-env-config", "--levels-dir", str(levels), "--cache-dir", str(tmp_path / "cache")) as url:
        with GenericEnvClient(base_url=url).sync() as client:
            for kwargs in asked:
                result, steps = client.reset(**kwargs, chat="full", records=True), []
                while not result.done:
                    result = client.step(turns[len(steps)])
                    steps.append({"messages": result.observation["messages"], "reward": result.reward})
                played.append((steps, result.observation["record"]))
    for kwargs, (steps, record) in zip(asked, played):
        env_config = kwargs.get("env_config") or ({"levels": str(levels / kwargs["levels"])} if "levels" in kwargs
                                                  else None)
        want_steps, want_record = in_process(kwargs["env"], kwargs["seed"], turns, kwargs["protocol"], env_config)
        if "levels" in kwargs:  # the server names the file as the client did, never by its path
            want_record["env_config"]["levels"] = kwargs["levels"]
        assert (steps, record) == (want_steps, want_record), kwargs
    lake = played[0][1]["env_config"]
    assert len(played[0][0]) == 2 and (lake["height"], lake["width"]) == (5, 5)
    assert "#P_XO#" in played[2][0][0]["messages"][1]["content"]  # the file's second level, #@ $.#


def test_a_build_over_the_time_budget_is_stopped_while_other_sessions_play() -> None:
    hostile = {"height": 30, "width": 30, "num_boxes": 8, "search_budget": 10_000_000, "max_attempts": 1_000_000}
    opened = [arg for field in hostile for arg in ("--env-config-limit", f"sokoban.{field}=none")]
    with serve(*opened, "--generation-timeout", "1", "--max-concurrent-generations", "1") as url, \
            connect(ws_url(url)) as attacker, connect(ws_url(url)) as player:
        assert exchange(player, "reset", {"env": "bandit", "seed": 3})["type"] == "observation"
        start = time.monotonic()
        attacker.send(json.dumps({"type": "reset", "data": {"env": "sokoban", "seed": 1, "env_config": hostile}}))
        time.sleep(0.3)  # the hostile build runs now
        step = exchange(player, "step", {"actions": ["Phoenix"]})
        stepped = time.monotonic() - start
        refused = json.loads(attacker.recv(timeout=30))
        refused_after = time.monotonic() - start
        assert step["type"] == "observation" and step["data"]["done"]
        assert refused["type"] == "error" and "budget of 1s" in refused["data"]["message"], refused
        assert 1.0 <= refused_after < 10 and stepped < refused_after  # the turn did not wait for the build
        # The refused session stays open and plays.
        assert exchange(attacker, "reset", {"env": "sokoban", "seed": 1})["type"] == "observation"


def test_token_required_beyond_loopback_and_checked() -> None:
    refused = subprocess.run([sys.executable, "-m", "ragen_envs.openenv_server", "--host", "0.0.0.0", "--port", "0"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and refused.stdout == ""
    # A token no client can send (here with a trailing space) once started a server that answered only 401s.
    unmatchable = subprocess.run([sys.executable, "-m", "ragen_envs.openenv_server", "--port", "0",
                                  "--auth-token-env", "T"], capture_output=True, text=True, timeout=30,
                                 env={**os.environ, "T": "s3cret "})
    assert unmatchable.returncode == 2 and "RFC 6750" in unmatchable.stderr and unmatchable.stdout == ""
    with serve("--auth-token-env", "RAGEN_TEST_TOKEN", env={"RAGEN_TEST_TOKEN": "s3cret"}) as url:
        with pytest.raises(InvalidStatus) as anonymous:
            connect(ws_url(url))
        assert anonymous.value.response.status_code == 401
        with pytest.raises(InvalidStatus):
            connect(ws_url(url), additional_headers={"Authorization": "Bearer wrong"})
        with GenericEnvClient(base_url=url, headers={"Authorization": "Bearer s3cret"}).sync() as client:
            assert client.reset(seed=4).observation["info"]["seed"] == 4


def test_openenv_validate_passes_on_the_running_server_and_the_package() -> None:
    with serve() as url:
        live = subprocess.run([OPENENV, "validate", "--url", url, "--level", "semantic", "--json"],
                              capture_output=True, text=True, timeout=120)
    assert live.returncode == 0, live.stdout + live.stderr
    report = json.loads(live.stdout)
    assert report["passed"] and all(c["passed"] for c in report["criteria"])
    package = subprocess.run([OPENENV, "validate", str(PACKAGE_DIR), "--level", "semantic", "--json"],
                             capture_output=True, text=True, timeout=300)
    assert package.returncode == 0, package.stdout + package.stderr
    results = {r["check_id"]: r for r in json.loads(package.stdout)["results"]}
    assert results["static.manifest"]["status"] == "pass"
    assert not [r for r in results.values() if r["status"] in ("fail", "error")]


def test_the_documented_snippet_runs_and_the_declared_oracle_wins_every_level() -> None:
    page = (PACKAGE_DIR.parents[1] / "docs" / "integrations.md").read_text()
    section = page[page.index("## OpenEnv"):]
    snippet = section[section.index("```python\n") + 10:section.index("```", section.index("```python\n") + 10)]
    with serve("--reveal-certificate") as url:
        shown = subprocess.run([sys.executable, "-c", snippet.replace("http://127.0.0.1:8000", url)],
                               capture_output=True, text=True, timeout=120)
        assert shown.returncode == 0, shown.stderr
        oracle = subprocess.run([sys.executable, "-m", "ragen_envs.openenv_server.oracle", url, "--episodes", "8"],
                                capture_output=True, text=True, timeout=300)
    assert oracle.returncode == 0, oracle.stderr
    assert oracle.stdout.startswith("oracle: 8/8 won on sokoban")
    # The oracle of openenv.yaml is this module: the manifest's location names it.
    assert "location: oracle.py" in (PACKAGE_DIR / "openenv.yaml").read_text()


class LoopbackProvider:
    """Stands in for OpenEnv's docker provider, which needs a docker engine this machine lacks: "builds"
    nothing and starts the package's own server as a loopback process. It cannot enforce a network policy
    and says so (the network checks then SKIP, naming the capability)."""

    name = "loopback-process"
    supported_network_modes = frozenset({"public"})

    def __init__(self) -> None:
        from openenv.validation.types import ProviderCapability

        self.capabilities = frozenset({ProviderCapability.IMAGE_BUILD})
        self._serving = None

    def build(self, root: Path, execution) -> str:
        return "sha256:" + "0" * 64

    def start(self, spec):
        provider = self
        provider._serving = serve()
        url = provider._serving.__enter__()

        class Running:
            base_url = url

            def inspect(self) -> dict:
                return {}

            def logs(self, max_bytes: int = 65536) -> str:
                return ""

            def exec(self, argv, timeout_s):
                raise NotImplementedError("no sandbox to exec in")

            def stop(self) -> None:
                provider._serving.__exit__(None, None, None)

        return Running()


def test_openenv_runtime_lane_passes_against_the_server_in_a_loopback_process(tmp_path: Path) -> None:
    import shutil

    import yaml
    from openenv.validation import Level, run_validation

    package = tmp_path / "package"
    shutil.copytree(PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = yaml.safe_load((package / "openenv.yaml").read_text())
    # What a container build would add: the execution binding and its probe (a reset and three turns).
    manifest["validation"]["execution"] = {"probe_path": "validation/runtime.json"}
    manifest["validation"]["network"] = {"mode": "public"}
    (package / "openenv.yaml").write_text(yaml.safe_dump(manifest))
    (package / "validation").mkdir()
    (package / "validation" / "runtime.json").write_text(json.dumps({
        "plan_schema_version": "1", "reset": {"episode_id": "probe-1", "seed": 7},
        "actions": [{"reply": "<think>go</think><answer>Up || Left</answer>"}, {"message": "no tags"},
                    {"actions": ["Down"]}]}))
    report = run_validation(package, max_level=Level.SEMANTIC, provider=LoopbackProvider())
    results = {r.check_id: r for r in report.results}
    for check in ("static.manifest", "runtime.startup", "runtime.reward_well_formed", "runtime.observation_schema",
                  "runtime.state_contract"):
        assert results[check].status.value == "pass", (check, results[check].evidence)
    assert not [c for c, r in results.items() if r.status.value in ("fail", "error")]


def test_observation_dump_skips_pydantic_yet_equals_its_dump() -> None:
    """``GameObservation.model_dump`` as OpenEnv calls it (``exclude`` of top-level names) returns the values
    as built, where pydantic's serialiser would copy them: same dict, in every game, chat mode and with
    records and the certificate; any other call is pydantic's own."""
    from openenv.core.env_server.serialization import serialize_observation
    from pydantic import BaseModel

    from ragen_envs.openenv_server.environment import GameAction, ServerSettings, TextGameEnvironment

    replies = ["<think>a</think><answer>{0} || {1}</answer>", "no tags", "<think>b</think><answer>{1}</answer>"] * 3
    seen = 0
    for reveal in (False, True):
        environment = TextGameEnvironment(ServerSettings(reveal_certificate=reveal))
        for env in ("bandit", "frozenlake", "simple_sokoban"):
            for chat, records in (("new", False), ("full", True)):
                observation = environment.reset(env=env, seed=3, chat=chat, records=records)
                names = environment._episode.game.action_names
                for template in [None, *replies]:
                    if template is not None:
                        if observation.done:
                            break
                        observation = environment.step(GameAction(reply=template.format(names[0], names[-1])))
                    for exclude in ({"reward", "done"}, None):
                        assert observation.model_dump(exclude=exclude) == BaseModel.model_dump(observation,
                                                                                                exclude=exclude)
                    assert json.dumps(serialize_observation(observation)) == json.dumps(
                        {**{"observation": BaseModel.model_dump(observation, exclude={"reward", "done"})},
                         "reward": observation.reward, "done": observation.done})
                    seen += 1
    assert observation.model_dump(mode="json", include={"chat"}) == {"chat": "full"}
    assert seen > 30
