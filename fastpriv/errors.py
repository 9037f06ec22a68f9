"""The exception types fastpriv raises for bad input.

Every check of what a user passed (a column name, a threshold, a file, a value named on the
command line) raises :class:`InputError`, naming the parameter and what was expected. It
subclasses :class:`ValueError`, so ``except ValueError`` keeps working; a wrong *kind* of
argument raises :class:`InputTypeError`, which is also a :class:`TypeError`.

Anything else that escapes fastpriv is a bug, not bad input: the command line reports it as an
internal error (exit status 3) with its traceback instead of disguising it as a usage error.
"""

from __future__ import annotations

__all__ = ["InputError", "InputTypeError", "OutputError"]


class InputError(ValueError):
    """Bad input: the message names the parameter and what was expected."""


class InputTypeError(InputError, TypeError):
    """Bad input of the wrong kind (a string where a number was expected, say)."""


class OutputError(InputError):
    """An output cannot be written where it was asked for.

    The path is not a regular file (a directory, device, FIFO or socket), its folder is not
    writable, or the write, flush or rename failed (read-only or full file system). Nothing
    partial is left behind. The command line treats it like bad input (exit status 2).
    """
