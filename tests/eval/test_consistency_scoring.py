"""Thought-state consistency scoring: claims, verdicts, per-turn and run-level metrics."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragen_eval.consistency import aggregate, positions_by_object, relations_by_subject, score_episode, score_turn
from ragen_eval.consistency.board import Board
from ragen_eval.consistency.claims import normalise_canonical
from ragen_eval.consistency.verify import check_bandit

# Level s1 of the labelled set: player (3,4), box (2,2), target (4,2), walls on the border.
S1_ROWS = ["######", "#    #", "# $  #", "#   @#", "# .  #", "######"]
S1 = {"game": "sokoban", "height": 6, "width": 6, "rows": S1_ROWS, "player": [3, 4], "boxes": [[2, 2]],
      "targets": [[4, 2]], "walls": [[r, c] for r in range(6) for c in range(6) if S1_ROWS[r][c] == "#"]}
LAKE = {"game": "frozenlake", "height": 4, "width": 4, "rows": ["SFFF", "FHFH", "FFFH", "HFFG"], "player": [0, 0],
        "start": [0, 0], "goal": [3, 3], "holes": [[1, 1], [1, 3], [2, 3], [3, 0]], "is_slippery": True}
ARMS = {"game": "bandit", "chosen": None, "arms": [
    {"name": "phoenix", "expected_reward": 0.1, "variance": 0.0, "low_risk": True},
    {"name": "dragon", "expected_reward": 0.25, "variance": 0.1875, "low_risk": False}]}


def verdicts(score: dict) -> dict[str, bool | None]:
    return {c["canonical"]: c["verdict"] for c in score["claims"]}


def test_turn_counts_true_false_and_plan_agreement():
    think = ("I am at (3,4) and the box is at (2,3). The target is directly below the box. "
             "There is a wall to my right. I will move up, then left.")
    score = score_turn({"state_before": S1, "think": think, "answer": "Up || Left"}, game="sokoban")
    assert verdicts(score) == {"at(player,3,4)": True, "at(box,2,3)": False,
                               "rel(target,box,down,line)": True, "rel(wall,player,right,1)": True}
    assert (score["n_claims"], score["n_true"], score["n_false"]) == (4, 3, 1)
    assert score["claim_accuracy"] == pytest.approx(0.75)
    assert score["hallucinated"] is True
    assert score["plan"] == ["up", "left"] and score["plan_agrees"] is True


def test_claims_carry_spans_and_cells_for_transcripts():
    think = "Hmm. The box is at (3, 3) now."
    score = score_turn({"state_before": S1, "think": think, "answer": "Up"}, game="sokoban", coordinate_base=1)
    claim = score["claims"][0]
    assert claim["canonical"] == "at(box,2,2)" and claim["kind"] == "position"
    assert think[claim["start"]:claim["end"]] == claim["text"] == "box is at (3, 3)"
    assert claim["cells"] == [[2, 2]] and claim["verdict"] is True


def test_one_based_slip_is_a_hallucination():
    # The prompt declared 1-based cells; the model wrote 0-based ones.
    score = score_turn({"state_before": S1, "think": "The player is at (3,4).", "answer": "Up"},
                       game="sokoban", coordinate_base=1)
    assert verdicts(score) == {"at(player,2,3)": False}


@pytest.mark.parametrize("think", [
    "If I were at (1,2) I could push the box down.",
    "Is the box at (2,2)?",
    "I'm not at (1,2).",
    "The box is somewhere over there, I guess.",
    "Maybe the box is at (2,2).",
    "",
    "<<<>>> ((( 3,,, ))) row col @@@",
])
def test_questions_negations_speculation_and_noise_give_no_claims(think):
    score = score_turn({"state_before": S1, "think": think, "answer": "Up"}, game="sokoban")
    assert score["claims"] == [] and score["claim_accuracy"] is None and score["hallucinated"] is None


def test_deterministic_predictions_are_simulated_from_the_state_before():
    think = "Plan: up, up, left, left. After these moves I will be at (1,2). Pushing left puts the box at (2,1)."
    score = score_turn({"state_before": S1, "think": think, "answer": "Up || Up || Left || Left"}, game="sokoban")
    # Pushing left from (3,4) moves the player to (3,3); the box at (2,2) is not in the way.
    assert verdicts(score) == {"after(up,up,left,left|at(player,1,2))": True,
                               "after(left|at(box,2,1))": False}


def test_slippery_predictions_use_the_executed_outcome_or_stay_unchecked():
    think = "Going right puts me at (0,1)."
    unexecuted = score_turn({"state_before": LAKE, "think": think, "answer": "Down",
                             "actions_executed": ["Down"]}, game="frozenlake")
    assert verdicts(unexecuted) == {"after(right|at(player,0,1))": None}
    assert unexecuted["n_claims"] == 0 and unexecuted["n_unverifiable"] == 1
    slipped_to = {**LAKE, "player": [1, 0]}
    executed = score_turn({"state_before": LAKE, "think": think, "answer": "Right", "actions_executed": ["Right"],
                           "state_after": slipped_to, "infos": [{"slipped": True}]}, game="frozenlake")
    assert verdicts(executed) == {"after(right|at(player,0,1))": False}
    no_slip_prefix = score_turn({"state_before": LAKE, "think": think, "answer": "Right || Down",
                                 "actions_executed": ["Right", "Down"],
                                 "infos": [{"slipped": False}, {"slipped": True}]}, game="frozenlake")
    assert verdicts(no_slip_prefix) == {"after(right|at(player,0,1))": True}


def test_bandit_claims_and_plan():
    think = "Phoenix is the safe arm. Dragon has a higher expected reward but phoenix pays more. I'll choose dragon."
    score = score_turn({"state_before": ARMS, "think": think, "answer": "Dragon", "actions_parsed": ["Dragon"]},
                       game="bandit")
    assert verdicts(score) == {"risk(phoenix,low)": True, "reward(dragon,high)": True, "reward(phoenix,high)": False}
    assert score["plan"] == ["dragon"] and score["plan_agrees"] is True


def _arms(*names: str) -> dict:
    return {"game": "bandit", "arms": [{"name": name, "expected_reward": 0.1 * (i + 1), "variance": 0.1 * (i + 1)}
                                       for i, name in enumerate(names)]}


@pytest.mark.parametrize("names, think, expected", [
    # thoughts a tiny model wrote on held-out arms: a name of another pool, a near miss
    (("Tiger", "Unicorn"), "The arms are Tornado and Unicorn. Anicorn. I choose Tiger",
     {"arms(tornado,unicorn)": False}),
    (("Owl", "Tiger"), "The arms are Oak and Tiger. Tiger.", {"arms(oak,tiger)": False}),
    (("Tiger", "Unicorn"), "The arms are Unicorn and Tiger. I choose Tiger.", {"arms(unicorn,tiger)": True}),
    (("phoenix", "dragon"), "Two arms: phoenix and dragon.", {"arms(phoenix,dragon)": True}),
    (("Phoenix", "Dragon"), "Arms: Phoenix, Dragon. Choose one to pull.", {"arms(phoenix,dragon)": True}),
    (("Phoenix", "Dragon"), "The arms are Phoenix, Dragon, and Owl.", {"arms(phoenix,dragon,owl)": False}),
    (("Phoenix", "Dragon", "Owl"), "The arms are Owl and Phoenix.", {"arms(owl,phoenix)": False}),  # one left out
    # not lists of arms: a description, a question, a hedge
    (("Phoenix", "Dragon"), "The arms are risky and safe.", {}),
    (("Phoenix", "Dragon"), "Are the arms Phoenix and Dragon? Maybe the arms are Phoenix and Owl.", {}),
])
def test_a_list_of_arms_is_one_claim(names, think, expected):
    score = score_turn({"state_before": _arms(*names), "think": think, "answer": names[0]}, game="bandit")
    assert {c: v for c, v in verdicts(score).items() if c.startswith("arms(")} == expected


@settings(max_examples=60, deadline=None)
@given(st.permutations(["Owl", "Tiger", "Kraken", "Vault", "Meteor"]), st.integers(2, 3), st.booleans())
def test_an_arms_claim_is_true_exactly_when_it_names_the_levels_arms(pool, n_arms, shuffled):
    """The level's arms in either order make a true claim; one name swapped for another makes a false one."""
    level, spare = pool[:n_arms], pool[n_arms]
    stated = list(reversed(level)) if shuffled else list(level)
    state = _arms(*level)
    listing = lambda names: "The arms are " + ", ".join(names[:-1]) + " and " + names[-1] + "."  # noqa: E731
    right = score_turn({"state_before": state, "think": listing(stated), "answer": level[0]}, game="bandit")
    wrong = score_turn({"state_before": state, "think": listing(stated[:-1] + [spare]), "answer": level[0]},
                       game="bandit")
    assert verdicts(right) == {f"arms({','.join(n.lower() for n in stated)})": True}
    assert list(verdicts(wrong).values()) == [False]


def test_a_name_with_a_space_reads_the_same_from_rules_and_from_a_judge():
    """Custom arm names may hold spaces; the rules' claims must equal the judge's normalised form and stay checked."""
    state = _arms("Savings Account", "Lottery")
    think = "The arms are Savings Account and Lottery. Savings Account is the safer arm. Lottery pays more on average."
    rules = verdicts(score_turn({"state_before": state, "think": think, "answer": "Lottery"}, game="bandit"))
    assert rules == {"arms(savingsaccount,lottery)": True, "risk(savingsaccount,low)": True,
                     "reward(lottery,high)": True}
    for judged in ("risk(Savings Account, low)", "ARMS(Lottery, Savings Account)", "reward(savings account,high)"):
        canonical = normalise_canonical(judged)
        assert check_bandit(canonical, state["arms"]) is (judged != "reward(savings account,high)")


def test_bandit_ties_are_unverifiable():
    tied = {**ARMS, "arms": [{**a, "expected_reward": 0.2} for a in ARMS["arms"]]}
    score = score_turn({"state_before": tied, "think": "Dragon pays more on average.", "answer": "dragon"},
                       game="bandit")
    assert verdicts(score) == {"reward(dragon,high)": None}
    # 0.3 against 3.0 x 0.1 = 0.30000000000000004 is a tie too, as the env's best arms count it (was: true).
    rounding = {**ARMS, "arms": [{**ARMS["arms"][0], "expected_reward": 0.3},
                                 {**ARMS["arms"][1], "expected_reward": 3.0 * 0.1}]}
    score = score_turn({"state_before": rounding, "think": "Dragon pays more on average.", "answer": "dragon"},
                       game="bandit")
    assert verdicts(score) == {"reward(dragon,high)": None}


# Review findings, each once scored the other way. S1: player (3,4), box (2,2), target (4,2).
@pytest.mark.parametrize(("think", "answer", "expected"), [
    # A negated or hedged outcome is no prediction (was: read as the positive one).
    ("After these moves I will not be at (2, 4).", "Up", {}),
    ("Moving up won't solve the puzzle.", "Up", {}),
    ("Moving up might put me at (2, 4).", "Up", {}),
    ("If I move up, I would be at (2, 4).", "Up", {}),
    ("If I move up, I will be at (2, 4).", "Up", {"after(up|at(player,2,4))": True}),
    # A move already made describes the state shown (was: simulated one more step).
    ("I moved left, so I am at (3, 4).", "Up", {"at(player,3,4)": True}),
    ("I moved left, which put me at (3, 4).", "Up", {"at(player,3,4)": True}),
    # A cell written after an object is the object's (was: credited to the subject).
    ("I am below the box at (2, 2).", "Up", {"rel(player,box,down)": True, "at(box,2,2)": True}),
    # Cells named for both things pin the relation (was: true if any target lay below any box).
    ("The target at (4, 2) is directly below the box at (2, 2).", "Up",
     {"at(target,4,2)": True, "rel(target@4:2,box@2:2,down,line)": True, "at(box,2,2)": True}),
    ("The target at (4, 2) is to the right of the box at (2, 2).", "Up",
     {"at(target,4,2)": True, "rel(target@4:2,box@2:2,right)": False, "at(box,2,2)": True}),
    # "upper"/"underneath" were read as "up"/"under" plus noise.
    ("The target is to the upper left of the box.", "Up", {"rel(target,box,up-left)": False}),
    ("The target is underneath the box.", "Up", {"rel(target,box,down)": True}),
    # A count is checked (was: "some box is on a target").
    ("Two boxes are on targets.", "Up", {"placed(2)": False}),
    ("No box is on a target. Zero boxes are placed.", "Up", {"placed(0)": True}),
    # A box's cell is no empty cell (was: floor included the boxes).
    ("(2, 2) is an empty cell.", "Up", {"at(floor,2,2)": False}),
    ("(2, 3) is an empty cell.", "Up", {"at(floor,2,3)": True}),
])
def test_review_cases_score_as_the_state_says(think, answer, expected):
    score = score_turn({"state_before": S1, "think": think, "answer": answer}, game="sokoban")
    assert verdicts(score) == expected


def test_a_pushed_box_must_land_on_the_target_itself():
    """With one box already placed, "pushing left puts the box on the target" was true whatever the push did."""
    rows = ["########", "#    * #", "#  . $@#", "########"]
    state = {"game": "sokoban", "height": 4, "width": 8, "rows": rows, "player": [2, 6], "boxes": [[1, 5], [2, 5]],
             "targets": [[1, 5], [2, 3]], "walls": [[r, c] for r in range(4) for c in range(8) if rows[r][c] == "#"]}
    think = "Pushing left puts the box on the target."
    short = score_turn({"state_before": state, "think": think, "answer": "Left"}, game="sokoban")
    assert verdicts(short) == {"after(left|on(box,target))": False}  # the box moves to (2,4), not a target
    far = score_turn({"state_before": state, "think": "After these moves the box will be on the target.",
                      "answer": "Left || Left"}, game="sokoban")
    assert verdicts(far) == {"after(left,left|on(box,target))": True}


def test_aggregate_matches_hand_computed_figures():
    turns = [
        {"state_before": S1, "think": "I am at (3,4). The box is at (1,1).", "answer": "Up"},   # 1 true, 1 false
        {"state_before": S1, "think": "The target is at (4,2). I will go up.", "answer": "Up"},  # 1 true, plan ok
        {"state_before": S1, "think": "No idea. I'll go down.", "answer": "Left"},             # 0 claims, plan bad
        {"state_before": S1, "think": "Thinking...", "answer": "Up"},                           # nothing
    ]
    scores = [score_turn(t, game="sokoban") for t in turns]
    agg = aggregate(scores)
    assert (agg["n_turns"], agg["n_claims"], agg["n_true"], agg["n_false"]) == (4, 3, 2, 1)
    assert agg["claims_per_turn"] == pytest.approx(3 / 4)
    assert agg["claim_accuracy"] == pytest.approx(2 / 3)
    assert agg["hallucination_rate"] == pytest.approx(1 / 2)
    assert agg["turns_with_claims"] == pytest.approx(2 / 4)
    assert agg["plan_answer_agreement"] == pytest.approx(1 / 2)
    assert agg["by_kind"]["position"] == {"n_claims": 3, "claim_accuracy": pytest.approx(2 / 3)}
    assert aggregate([{"turns": scores[:2]}, {"turns": scores[2:]}]) == agg
    assert aggregate([])["claim_accuracy"] is None


def test_positions_by_object_split_the_checkable_position_claims_by_what_they_place():
    turns = [
        {"state_before": S1, "think": "I am at (3,4). The box is at (1,1).", "answer": "Up"},  # player true, box false
        {"state_before": S1, "think": "The target is at (4,2). The box is at (2,2).", "answer": "Up"},  # both true
        {"state_before": S1, "think": "The target is directly below the box.", "answer": "Up"},  # a relation only
    ]
    scores = [score_turn(t, game="sokoban") for t in turns]
    by_object = positions_by_object(scores)
    assert by_object == {"box": {"n_claims": 2, "claim_accuracy": 0.5}, "player": {"n_claims": 1, "claim_accuracy": 1.0},
                         "target": {"n_claims": 1, "claim_accuracy": 1.0}}
    # the objects add up to aggregate's pooled position claims, and episode scores pool their turns the same way
    assert sum(v["n_claims"] for v in by_object.values()) == aggregate(scores)["by_kind"]["position"]["n_claims"]
    assert positions_by_object([{"turns": scores[:1]}, {"turns": scores[1:]}]) == by_object
    assert positions_by_object([]) == {}
    # relations split the same way, by the thing they place: here one target relation, true in S1
    assert relations_by_subject(scores) == {"target": {"n_claims": 1, "claim_accuracy": 1.0}}
    assert relations_by_subject([]) == {}
    lake = score_turn({"state_before": LAKE, "think": "The goal is down and to the right of me. There is a hole to my "
                       "right. There is a hole below me.", "answer": "Down"}, game="frozenlake")
    assert relations_by_subject([lake]) == {"goal": {"n_claims": 1, "claim_accuracy": 1.0},
                                            "hole": {"n_claims": 2, "claim_accuracy": 0.0}}


@pytest.mark.parametrize("bad, message", [
    ({"think": "x"}, "state_before"),
    ({"state_before": {"game": "sokoban"}, "think": "The box is at (1,1)."}, "malformed sokoban state"),
])
def test_bad_turns_raise_clear_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        score_turn(bad, game="sokoban")


def test_bad_game_and_base_raise():
    with pytest.raises(ValueError, match="'sokoban' state, but game='frozenlake'"):
        score_turn({"state_before": S1, "think": ""}, game="frozenlake")
    with pytest.raises(ValueError, match="turn 0 of the episode"):
        score_episode({"protocol": {}, "turns": [{"think": "I am at (1,1)."}]})
    with pytest.raises(ValueError, match="unknown game"):
        score_turn({"state_before": S1, "think": ""}, game="chess")
    with pytest.raises(ValueError, match="coordinate_base"):
        score_turn({"state_before": S1, "think": "I am at (1,1)."}, game="sokoban", coordinate_base=2)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_any_text_scores_without_error_and_spans_index_the_text(think):
    score = score_turn({"state_before": S1, "think": think, "answer": "Up"}, game="sokoban")
    for claim in score["claims"]:
        assert think[claim["start"]:claim["end"]] == claim["text"]
    assert score["n_claims"] + score["n_unverifiable"] == len(score["claims"])


_WORDS = st.sampled_from(["The box is at", "Box at", "box:", "There is a box at", "the box sits at"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), r=st.integers(0, 6), c=st.integers(0, 6), base=st.sampled_from([0, 1]),
       lead=_WORDS, paren=st.booleans())
def test_position_verdicts_follow_the_real_game_state(seed, r, c, base, lead, paren):
    ragen_envs = pytest.importorskip("ragen_envs")
    env = ragen_envs.make("simple_sokoban").unwrapped
    env.reset(seed=seed)
    state = env.state_dict()
    cell = f"({r + base}, {c + base})" if paren else f"row {r + base}, column {c + base}"
    score = score_turn({"state_before": state, "think": f"{lead} {cell}.", "answer": "Up"},
                       game="sokoban", coordinate_base=base)
    assert verdicts(score) == {f"at(box,{r},{c})": [r, c] in state["boxes"]}


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_relation_verdicts_follow_geometry(seed):
    ragen_envs = pytest.importorskip("ragen_envs")
    env = ragen_envs.make("simple_sokoban").unwrapped
    env.reset(seed=seed)
    state = env.state_dict()
    (pr, pc), boxes = state["player"], state["boxes"]
    think = "The box is to my left. There is a wall above me. The target is down and to the right of me."
    got = verdicts(score_turn({"state_before": state, "think": think, "answer": "Up"}, game="sokoban"))
    assert got["rel(box,player,left)"] == any(bc < pc for _, bc in boxes)
    assert got["rel(wall,player,up,1)"] == ([pr - 1, pc] in state["walls"])
    assert got["rel(target,player,down-right)"] == any(tr > pr and tc > pc for tr, tc in state["targets"])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), actions=st.lists(st.integers(0, 3), min_size=1, max_size=8))
def test_board_moves_agree_with_the_sokoban_env(seed, actions):
    ragen_envs = pytest.importorskip("ragen_envs")
    env = ragen_envs.make("simple_sokoban").unwrapped
    env.reset(seed=seed)
    board = Board.from_state(env.state_dict())
    for action in actions:
        if board.finished:
            break
        env.step(action)
        board = board.move(env.action_names[action].lower())
        truth = Board.from_state(env.state_dict())
        assert (board.player, board.cells_of("box")) == (truth.player, truth.cells_of("box"))


def test_score_episode_on_a_played_text_episode():
    text = pytest.importorskip("ragen_envs.text")
    episode = text.TextEpisode("simple_sokoban", 3, config=text.ProtocolConfig(coordinate_base=1))
    state = episode.env.unwrapped.state_dict()
    (pr, pc), (br, bc) = state["player"], state["boxes"][0]
    think = f"I am at ({pr + 1}, {pc + 1}). The box is at ({br}, {bc}). I will move down."
    episode.step(f"<think>{think}</think><answer>Down</answer>")
    record = episode.record()
    scored = score_episode(record)
    assert verdicts(scored["turns"][0]) == {f"at(player,{pr},{pc})": True, f"at(box,{br - 1},{bc - 1})": False}
    assert scored["claim_accuracy"] == pytest.approx(0.5) and scored["plan_answer_agreement"] == 1.0
    with pytest.raises(ValueError, match="turns"):
        score_episode({"protocol": {}})


def test_legend_symbols_name_things():
    # RAGEN's default legend: P player, X box, O target (Sokoban); O hole, G goal (FrozenLake).
    sok = score_turn({"state_before": S1, "think": "P is at (3,4). X at (2,2), O at (4,1). The X is above the O.",
                      "answer": "Up"}, game="sokoban")
    assert verdicts(sok) == {"at(player,3,4)": True, "at(box,2,2)": True, "at(target,4,1)": False,
                             "rel(box,target,up)": True}
    lake = score_turn({"state_before": LAKE, "think": "The O cells are (1,1) and (2,2). G is at (3,3).",
                       "answer": "Right"}, game="frozenlake")
    assert verdicts(lake) == {"at(hole,1,1)": True, "at(hole,2,2)": False, "at(goal,3,3)": True}
    # A lower-case letter is a word, not a symbol; a custom legend replaces the defaults' meaning.
    assert score_turn({"state_before": S1, "think": "x at (2,2).", "answer": "Up"}, game="sokoban")["claims"] == []
    record = {"protocol": {"coordinate_base": 0, "symbols": {"box": "B"}},
              "turns": [{"state_before": S1, "think": "B at (2,2).", "answer": "Up"}]}
    assert verdicts(score_episode(record)["turns"][0]) == {"at(box,2,2)": True}


def test_mark_claims_places_verdicts_after_each_span():
    from ragen_eval.consistency.transcript import mark_claims

    think = "I am at (4,5). The box is at (1,1)."
    score = score_turn({"state_before": S1, "think": think, "answer": "Up"}, game="sokoban", coordinate_base=1)
    marked = mark_claims(think, score["claims"], coordinate_base=1)
    assert marked == ("I am at (4,5) [TRUE at(player,3,4) cell (4,5)]. "
                      "The box is at (1,1) [FALSE at(box,0,0) cell (1,1)].")


@pytest.mark.parametrize("think", [
    "I " * 10_000,
    "the box is " * 2_000,
    "Boxes at " + "(1,1), " * 3_000,
    "the box" + " " * 20_000 + "is at (2,2)",
    "Push " + "up , , , " * 2_000 + "x",
    "(" * 10_000 + "2,2" + ")" * 10_000,
    "dragon is riskier and " * 1_000,
], ids=["I", "the-box-is", "coords", "blanks", "seps", "parens", "bandit"])
def test_long_repetitive_text_is_handled(think):
    """Guards against patterns that go quadratic on repetition: each of these took minutes once."""
    game, state = ("bandit", ARMS) if think.startswith("dragon") else ("sokoban", S1)
    score = score_turn({"state_before": state, "think": think, "answer": "Up"}, game=game)
    assert score["n_claims"] <= 2
