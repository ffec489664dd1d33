"""SHA-256 of files: the one way the toolkit hashes a file, and hashing beside the caller.

Validation and the report check every predictions file against its recorded
SHA-256: for 10,000 attempts, 1.2 GB, about a second of hashing here. A
:class:`Digests` given many files hashes them in a helper process
(:mod:`toolkit.plumbing.helper`) while the caller goes on with its own work, so the
hashing overlaps it instead of adding to it (benchmarks/README.md, target 4).
Each file is read and hashed now, never taken from a cache. Stdlib only: the
runner imports it too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from toolkit.plumbing.helper import Helper, HelperFailed

BLOCK = 1 << 20
#: Below this many files, starting a helper process costs more than it saves.
HELPER_MIN_FILES = 100


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_or_error(path: str | Path) -> str | OSError:
    """The file's SHA-256, or the OSError that stopped reading it."""
    try:
        return file_sha256(path)
    except OSError as exc:
        return exc


def hash_files(paths: list[str]) -> dict[str, str | OSError]:
    """Every file's :func:`sha256_or_error` (what the helper process runs).

    Paths travel as text: pickling 10,000 ``Path`` objects each way costs more
    than a second here."""
    return {path: sha256_or_error(path) for path in paths}


class Digests:
    """SHA-256 of files, hashed in a helper process when there are many.

    Use as a context manager: leaving it stops a helper still at work. :meth:`get`
    hashes a file here when no helper was started, the path was not given up
    front, or the helper failed.
    """

    def __init__(self, paths: Iterable[Path] = ()) -> None:
        given = list(dict.fromkeys(str(path) for path in paths))
        self._helper = (
            Helper("toolkit.plumbing.digests:hash_files", given)
            if len(given) >= HELPER_MIN_FILES
            else None
        )
        self._found: dict[str, str | OSError] | None = None

    def get(self, path: Path) -> str | OSError:
        """The file's SHA-256 (lowercase hex), or the OSError that stopped reading it."""
        if self._found is None:
            self._found = {}
            if self._helper is not None:
                try:
                    self._found = self._helper.result()
                except HelperFailed:
                    pass  # hashed here, file by file
        key = str(path)  # a Path and its text name the same file
        if key not in self._found:
            self._found[key] = sha256_or_error(path)
        return self._found[key]

    def close(self) -> None:
        if self._helper is not None:
            self._helper.close()

    def __enter__(self) -> Digests:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
