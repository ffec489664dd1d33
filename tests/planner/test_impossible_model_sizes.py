"""Hostile planner inputs: impossible head counts, huge sizes, parameter counts as typed
(toolkit.planner.memory, `iteralab memory estimate`, `iteralab gpus`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolkit.cli import cli
from toolkit.errors import UsageError
from toolkit.planner import memory

LLAMA = {
    "model_type": "llama",
    "vocab_size": 128256,
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
}
SIZES = ["--layers", "32", "--hidden-size", "4096", "--heads", "32"]


def _config(tmp_path: Path, **changes: object) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(LLAMA, **changes)), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("changes", "message", "hint"),
    [
        (
            {"num_key_value_heads": 0},
            "key 'num_key_value_heads' is 0, expected a positive integer",
            "check the config, or give explicit sizes instead (--params, --layers, --hidden-size, "
            "--heads)",
        ),
        (
            {"hidden_size": 4100},
            "hidden_size 4100 is not a multiple of num_attention_heads 32, and no head_dim is given",
            "check hidden_size and num_attention_heads, or add the model's head_dim to the config",
        ),
        (
            {"num_key_value_heads": 64},
            "num_key_value_heads 64 is more than num_attention_heads 32",
            "a KV head serves one or more query heads: check num_key_value_heads",
        ),
        (
            {"num_key_value_heads": 5},
            "num_attention_heads 32 is not a multiple of num_key_value_heads 5",
            "each KV head serves the same number of query heads: check num_key_value_heads",
        ),
        (
            {"head_dim": 0},
            "key 'head_dim' is 0, expected a positive integer",
            "check the config, or give explicit sizes instead (--params, --layers, --hidden-size, "
            "--heads)",
        ),
    ],
    ids=[
        "kv-heads-0",
        "hidden-not-multiple",
        "more-kv-than-heads",
        "heads-not-divisible",
        "head-dim-0",
    ],
)
def test_an_impossible_config_is_refused_naming_file_and_field(
    runner: CliRunner, tmp_path: Path, changes: dict[str, object], message: str, hint: str
) -> None:
    path = _config(tmp_path, **changes)
    with pytest.raises(UsageError) as caught:
        memory.shape_from_config(path)
    assert (caught.value.message, caught.value.hint) == (f"{path}: {message}", hint)
    result = runner.invoke(cli, ["memory", "estimate", "--config", str(path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: {path}: {message}", f"  what to do: {hint}"]


def test_a_given_head_dim_allows_a_hidden_size_that_is_not_a_multiple(tmp_path: Path) -> None:
    shape = memory.shape_from_config(_config(tmp_path, hidden_size=4100, head_dim=128))
    assert (shape.heads, shape.kv_heads, shape.head_dim) == (32, 8, 128)
    # An absent (null) num_key_value_heads still means one per head.
    shape = memory.shape_from_config(_config(tmp_path, num_key_value_heads=None))
    assert shape.kv_heads == 32


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--hidden-size", "4100"], "--hidden-size 4100 is not a multiple of --heads 32"),
        (["--kv-heads", "64"], "--kv-heads 64 is more than --heads 32"),
        (["--kv-heads", "5"], "--heads 32 is not a multiple of --kv-heads 5"),
    ],
    ids=["hidden-not-multiple", "more-kv-than-heads", "heads-not-divisible"],
)
def test_impossible_explicit_sizes_are_refused(
    runner: CliRunner, args: list[str], message: str
) -> None:
    result = runner.invoke(cli, ["memory", "estimate", "--params", "8B", *SIZES, *args])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == f"error: {message}"


def test_huge_sizes_keep_the_estimate_columns_apart(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(
        cli,
        [
            "memory",
            "estimate",
            "--config",
            str(_config(tmp_path)),
            "--batch",
            "100000",
            "--seq-len",
            "1000000",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[3] == "term                                bytes          GiB  formula"
    assert lines[5].startswith(
        "kv_cache           13,107,200,000,000,000  12207031.25  2 (K,V) x 32 layers"
    )
    assert lines[12] == "total              25,682,022,852,405,658  23918247.64  tensors + margin"
    for line in lines[4:13]:  # every row: name, bytes, GiB, then the formula
        name, size, gib = line.split()[:3]
        assert abs(int(size.replace(",", "")) * 100 / 2**30 - int(gib.replace(".", ""))) <= 1


def test_huge_sizes_keep_the_gpus_columns_apart(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(
        cli,
        [
            "gpus",
            "--config",
            str(_config(tmp_path)),
            "--batch",
            "100000",
            "--seq-len",
            "1000000",
            "--tariffs",
            str(tmp_path / "none.csv"),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[3] == (
        "gpu           VRAM/usable memory GB/s split    link    GiB/card     "
        "short 1 tok/s b=1 b=100000 tok/s/USD  7-day lot"
    )
    assert lines[4] == (
        "b200           180/165.60 HBM3e  8000 >8 cards -    23918247.64 "
        "23918082.04         -        -         -  no price in catalog "
        "(none.csv not found)"
    )
    # 11 columns (the split ">8 cards" in two words), then the price in 7 words.
    assert all(len(line.split()) == 12 + 7 for line in lines[4:12])


@pytest.mark.parametrize(
    ("typed", "count"),
    [
        ("8e9", 8_000_000_000),
        ("8B", 8_000_000_000),
        ("7.5B", 7_500_000_000),
        ("70b", 70_000_000_000),
        ("125M", 125_000_000),
        ("8030261248", 8_030_261_248),
        ("1.2T", 1_200_000_000_000),
        ("350k", 350_000),
        ("8 B", 8_000_000_000),
    ],
)
def test_params_as_people_type_them(runner: CliRunner, typed: str, count: int) -> None:
    result = runner.invoke(cli, ["memory", "estimate", "--params", typed, *SIZES, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["parameters"] == count


EXAMPLES = "e.g. 8030261248, 8e9, 8B, 7.5B, 70b or 125M"


@pytest.mark.parametrize(
    ("typed", "why"),
    [
        ("lots", f"'lots' is not a number of parameters ({EXAMPLES})"),
        ("8X", f"'8X' is not a number of parameters ({EXAMPLES})"),
        ("nan", f"'nan' is not a number of parameters ({EXAMPLES})"),
        ("B", f"'B' is not a number of parameters ({EXAMPLES})"),
        ("0", "'0' is not a positive number of parameters"),
        ("-8B", "'-8B' is not a positive number of parameters"),
        ("1.5", "'1.5' is 1.5 parameters, not a whole number"),
        ("1e30", "'1e30' is more than 10,000,000,000,000,000 parameters"),
    ],
)
def test_params_that_are_no_count_are_a_usage_error(
    runner: CliRunner, typed: str, why: str
) -> None:
    result = runner.invoke(cli, ["memory", "estimate", "--params", typed, *SIZES])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"Error: Invalid value for '--params': {why}"
