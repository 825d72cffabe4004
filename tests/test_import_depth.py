"""How deep ``ragen_eval`` stacks its own modules, and that its reports cannot start a run.

Layers are counted over the modules of ``ragen_eval`` (subpackages included; a package counts as
its ``__init__``). A module *imports* another when an ``import`` statement anywhere in its source,
at module top or inside a function, names it (``from ragen_eval.x import y`` names ``ragen_eval.x.y``
when that is a module, else ``ragen_eval.x``). A module that imports nothing from ``ragen_eval``
is layer 1; any other module is one layer above the highest module it imports. The depth of the
package is its highest layer, i.e. the number of modules on its longest import chain.

The project's own imports sit at module top; the few inside functions are listed with the heavy or
optional library that keeps each one there.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "ragen_eval"
ROOT = Path(__file__).resolve().parents[1]
#: What issue 12 asks for. Today's longest chains have five modules, e.g. cli -> judging -> agents ->
#: agents.builtin -> agents.base and cli -> summary -> consistency.scoring -> consistency.grid_claims ->
#: consistency.lexicon: only cli chains playing, judging and summarising, so only cli reaches layer 5.
MAX_LAYERS = 5
#: Modules that play or judge episodes; a report (summary, leaderboard) must reach none of them.
PLAYERS = ("ragen_eval.runner", "ragen_eval.judging", "ragen_eval.local_server", "ragen_eval.agents",
           "ragen_eval.agents.builtin", "ragen_eval.agents.openai_agent", "ragen_eval.agents.hf_agent",
           "ragen_eval.agents.vllm_agent")


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str) -> set[str]:
    path = MODULES[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name.split(".")[0] == PACKAGE)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if module.split(".")[0] == PACKAGE:
                out.update(f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names)
    out.discard(name)
    return out


GRAPH = {name: _imports(name) for name in MODULES}


_CHAINS: dict[str, tuple[str, ...]] = {}


def _chain(name: str, stack: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The longest import chain that starts at ``name`` (a cycle is an error naming it)."""
    if name in stack:
        raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(name):] + (name,)))
    if name not in _CHAINS:
        longest: tuple[str, ...] = ()
        for dep in sorted(GRAPH[name]):
            chain = _chain(dep, stack + (name,))
            longest = chain if len(chain) > len(longest) else longest
        _CHAINS[name] = (name, *longest)
    return _CHAINS[name]


def _reach(name: str) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        for dep in GRAPH[todo.pop()] - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def test_the_graph_is_read_from_real_imports():
    # Independent spot checks of the parser: a top-level, a function-level and a package import.
    assert "ragen_eval.run_dir" in GRAPH["ragen_eval.summary"]
    assert "ragen_eval.runner" in GRAPH["ragen_eval.cli"]  # imported inside evaluate_async
    assert "ragen_eval.agents" in GRAPH["ragen_eval.runner"]  # `from ragen_eval.agents import make_agent`
    assert GRAPH["ragen_eval.stats"] == set() and len(_chain("ragen_eval.stats")) == 1


def test_ragen_eval_is_at_most_five_layers_deep():
    longest = max((_chain(m) for m in MODULES), key=len)
    assert len(longest) <= MAX_LAYERS, f"{len(longest)} layers: " + " -> ".join(longest)


def test_only_the_command_line_chains_playing_judging_and_summarising():
    # The runner plays, judging judges, summary summarises: none of the three reaches another.
    steps = ("ragen_eval.runner", "ragen_eval.judging", "ragen_eval.summary")
    for step in steps:
        assert not _reach(step) & set(steps) - {step}, f"{step} reaches {_reach(step) & set(steps)}"
    assert {name for name in MODULES if len(_chain(name)) == MAX_LAYERS} == {"ragen_eval.cli"}


@pytest.mark.parametrize("report", ["ragen_eval.summary", "ragen_eval.leaderboard", "ragen_eval.run_dir"])
def test_reports_only_read_run_directories(report):
    reached = _reach(report)
    assert report == "ragen_eval.run_dir" or "ragen_eval.run_dir" in reached  # it does read runs
    assert not reached & set(PLAYERS), f"{report} can start an evaluation or a judge through {reached & set(PLAYERS)}"


#: The only project modules imported inside a function rather than at module top (issue 12), each
#: because it loads a heavy or optional library that the importing module must work without.
LAZY_PROJECT_IMPORTS = {
    ("ragen_eval.agents", "ragen_eval.agents.openai_agent"): "httpx and openai (the [eval] extra)",
    ("ragen_eval.agents.hf_agent", "ragen_eval.agents.kv_batching"): "torch and transformers",
    ("ragen_eval.cli", "ragen_eval.serve"): "aiohttp (the [eval] extra)",
    ("ragen_train.cli", "ragen_train.sft"): "torch, after the [train] check",
    ("ragen_train.cli", "ragen_train.trainer"): "torch, after the [train] check",
    ("ragen_train.cli", "ragen_train.run_dir"): "torch (its checkpoints), after the [train] check",
}


PROJECT = ("ragen_envs", "ragen_eval", "ragen_train")


def _function_level_project_imports(package: str) -> set[tuple[str, str]]:
    found = set()
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for func in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    targets = [f"{node.module}.{a.name}" if (ROOT / node.module.replace(".", "/") / a.name).with_suffix(
                        ".py").exists() else node.module for a in node.names]
                elif isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                else:
                    continue
                found.update((name, t) for t in targets if t.split(".")[0] in PROJECT)
    return found


def test_the_lazy_import_scan_sees_function_level_imports():
    # `from ragen_eval import serve` inside cmd_serve names the module ragen_eval.serve.
    assert ("ragen_eval.cli", "ragen_eval.serve") in _function_level_project_imports("ragen_eval")


@pytest.mark.parametrize("package", ["ragen_eval", "ragen_train"])
def test_project_imports_sit_at_module_top(package):
    lazy = _function_level_project_imports(package)
    assert lazy <= set(LAZY_PROJECT_IMPORTS), f"import these at module top: {sorted(lazy - set(LAZY_PROJECT_IMPORTS))}"
