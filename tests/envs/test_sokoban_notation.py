"""Standard notation and Boxoban files: round trips and clear errors on malformed text."""

from __future__ import annotations

import pytest

from ragen_envs.sokoban import format_boxoban, format_level, generate, load_boxoban, parse_boxoban, parse_level

MICROBAN_1 = """####
# .#
#  ###
#*@  #
#  $ #
#  ###
####"""


def test_parse_reads_every_symbol():
    level = parse_level("#######\n#@$$ .#\n# * . #\n#######")
    assert level.player == (1, 1)
    assert level.boxes == ((1, 2), (1, 3), (2, 2))
    assert level.targets == ((1, 5), (2, 2), (2, 4))
    assert (2, 1) not in level.walls and (0, 3) in level.walls and len(level.walls) == 18
    on_goal = parse_level("#####\n#+$ #\n# * #\n#####")
    assert on_goal.player == (1, 1) and (1, 1) in on_goal.targets
    assert set(on_goal.targets) == {(1, 1), (2, 2)} and set(on_goal.boxes) == {(1, 2), (2, 2)}


def test_ragged_rows_and_round_trip():
    level = parse_level(MICROBAN_1)
    assert (level.height, level.width) == (7, 6)
    assert format_level(level).split("\n")[0] == "####  "
    assert parse_level(format_level(level)) == level
    for seed in range(5):
        generated = generate({"height": 8, "width": 8, "num_boxes": 2}, seed)
        again = parse_level(format_level(generated))
        assert (again.walls, again.boxes, again.targets, again.player) == (
            generated.walls, generated.boxes, generated.targets, generated.player)


def test_boxoban_file(tmp_path):
    levels = [generate({"height": 10, "width": 10, "num_boxes": 4}, s) for s in range(3)]
    path = tmp_path / "000.txt"
    path.write_text(format_boxoban(levels))
    loaded = load_boxoban(path)
    assert [format_level(x) for x in loaded] == [format_level(x) for x in levels]
    assert path.read_text().startswith("; 0\n##########")


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("#####\n#@$x#\n#####", "unexpected character 'x' at row 1, column 3"),
        ("#####\n# $.#\n#####", "exactly one player"),
        ("######\n#@@$.#\n######", "exactly one player"),
        ("#####\n#@$.#\n#$  #\n#####", "2 boxes but 1 targets"),
        ("#####\n#@$. \n#####", "not enclosed"),
        ("#####\n#@ .#\n#####", "at least one box"),
    ],
)
def test_malformed_level_text_raises_naming_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        parse_level(text)


def test_malformed_boxoban_text():
    with pytest.raises(ValueError, match="before the first '; N' header"):
        parse_boxoban("#####\n#@$.#\n#####\n")
    with pytest.raises(ValueError, match="Boxoban level '1'.*exactly one player"):
        parse_boxoban("; 0\n#####\n#@$.#\n#####\n\n; 1\n#####\n# $.#\n#####\n")
    with pytest.raises(ValueError, match="no levels"):
        parse_boxoban("")


def test_level_object_validation_and_certificate_round_trip():
    from ragen_envs.sokoban import SokobanCertificate, SokobanLevel, solve

    border = frozenset((r, c) for r in range(4) for c in range(5) if r in (0, 3) or c in (0, 4))
    with pytest.raises(ValueError, match="box at \\(0, 1\\) is inside a wall"):
        SokobanLevel(4, 5, border, ((1, 2),), ((0, 1),), (1, 1))
    with pytest.raises(ValueError, match="player and a box share"):
        SokobanLevel(4, 5, border, ((1, 2),), ((1, 1),), (1, 1))
    with pytest.raises(ValueError, match="not a \\(row, col\\) cell"):
        SokobanLevel(4, 5, border, ((1, 2),), ((9, 9),), (1, 1))
    level = SokobanLevel(4, 5, border, ((2, 3),), ((2, 2),), (1, 1))
    cert = solve(level).certificate
    assert cert is not None and SokobanCertificate.from_dict(cert.to_dict()) == cert
    assert SokobanCertificate.from_dict({"solution": cert.action_names, "pushes": cert.pushes}) == cert
    assert level.with_certificate(cert).certificate == cert and not level.is_solved
