"""The exception tree. Imports nothing from the package.

Every error a user can act on says where (file, sheet, row, column), what was
expected and what to do. Each class carries its exit code; only the CLI's
entry point turns it into ``sys.exit``.
"""

from __future__ import annotations


class ToolkitError(Exception):
    """Base of every error the toolkit raises on purpose. Exit code 1."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  what to do: {self.hint}" if self.hint else self.message


class UsageError(ToolkitError):
    """The command line or a user-supplied value is wrong. Exit code 2."""

    exit_code = 2


class WorkbookError(ToolkitError):
    """A workbook cannot be read, is of the wrong shape, or cannot be saved."""


class WorkbookBusyError(WorkbookError):
    """Another program (Excel, LibreOffice, another iteralab) holds the workbook."""


class ProtocolError(ToolkitError):
    """The protocol is incomplete, not locked, or changed after its lock."""


class EvidenceInvalid(ToolkitError):
    """Validation found findings; the evidence cannot be trusted as it is."""


class CorpusError(ToolkitError):
    """A corpus file is unreadable or breaks the id/text rules."""


class ModelError(ToolkitError):
    """A model folder is missing files or cannot be loaded."""


class CatalogError(UsageError):
    """A tariff or GPU catalog is malformed or lacks the requested entry."""


class EndpointError(ToolkitError):
    """A serving endpoint cannot be measured: a local server that will not start."""
