"""An edited Manifest row is named against the journal (#14 item 7): what was installed and
run is evidence, like the attempt rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import make_campaign, variant
from toolkit import editing
from toolkit.cli import cli
from toolkit.evidence.validate import validate
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def test_a_torch_version_edited_in_the_manifest_is_a_finding(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 4)])
    assert CliRunner().invoke(cli, ["run", str(book), "--quiet"]).exit_code == 0
    assert validate(store.read(book), book) == []
    with editing.change(book, refresh_derived=False) as edit:
        row = edit.data.tables["Manifest"][0]
        real = row["torch"]
        row["torch"] = "2.99.0+cu999"
    (finding,) = validate(store.read(book), book)
    assert (finding.sheet, finding.row, finding.column, finding.check) == (
        "Manifest",
        2,
        "torch",
        "edited",
    )
    assert finding.message == (
        f"manifest {row['manifest_id']!r}: torch was {real!r} when recorded (journal), now "
        "'2.99.0+cu999': restore it; the Manifest says what really ran"
    )
