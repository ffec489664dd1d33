"""`iteralab head fit`: a linear head for your own labels, on the encoder you measure."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def head() -> None:
    """Linear heads for an encoder (what Variants head_path points at)."""


@head.command()
@click.argument("tuning_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--model",
    "model_path",
    required=True,
    help="The encoder: a folder, package:NAME or a hub id in the local cache, as model_path.",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The head folder to write (head.json and head.safetensors): Variants head_path.",
)
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The comparison corpus: a tuning file sharing an id or a text with it is refused.",
)
@click.option("--c", "c", default=1.0, show_default=True, help="Inverse L2 penalty strength.")
@click.option("--max-length", default=512, show_default=True, help="Tokens per text at most.")
def fit(
    tuning_file: Path,
    model_path: str,
    out: Path,
    corpus_path: Path | None,
    c: float,
    max_length: int,
) -> None:
    """Fit a linear head on TUNING_FILE (JSONL or CSV of id, text, label, kept apart from the
    comparison corpus) for the encoder --model, and write it to --out.

    The embedding is the runner's (mean pooling, L2 norm); the head is a multinomial
    logistic regression, fitted deterministically. Set Variants head_path to --out.
    """
    from toolkit.runner.engines import head_fit

    meta = head_fit.fit_head(tuning_file, model_path, out, corpus_path, c, max_length)
    fitted = meta["fit"]
    click.echo(
        f"fitted a head of {len(meta['labels'])} labels on {fitted['rows']} rows of "
        f"{tuning_file} (training accuracy {fitted['training_accuracy']:.4f}: not a "
        "measurement of the comparison corpus)"
    )
    click.echo(f"wrote {out / 'head.json'} and {out / 'head.safetensors'}")
    click.echo(f"next: set Variants head_path to {out} and model_path to {model_path}")


COMMANDS = [head]
