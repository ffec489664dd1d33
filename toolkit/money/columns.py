"""``--column FIELD=HEADER`` options: how an import reads another provider's CSV headers."""

from __future__ import annotations

from collections.abc import Sequence

from toolkit.errors import UsageError


def column_mapping(pairs: Sequence[str], fields: Sequence[str], example: str) -> dict[str, str]:
    """``FIELD=HEADER`` options as a field -> header dict; UsageError for a bad one
    (``example`` is shown in its hint, e.g. ``amount=Total``)."""
    mapping = {}
    for pair in pairs:
        field, sep, header = pair.partition("=")
        if not sep or field.strip() not in fields or not header.strip():
            raise UsageError(
                f"--column {pair!r}: expected FIELD=HEADER with FIELD one of {', '.join(fields)}",
                hint=f"e.g. --column {example}",
            )
        mapping[field.strip()] = header.strip()
    return mapping
