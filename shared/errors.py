"""Errors a person can act on, and one way to show them in a page.

Visitors read sentences, never server paths or library exception text. A ``UserInputError`` is about the visitor's
own input and is shown as it is. Any other error is a server-side problem: the visitor's sentence carries a short
error id, and the server log has the full detail (type, message, cause, traceback) under that id.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("demohub")


class DemoHubError(Exception):
    """Base class: the message is a sentence meant for a person, never a traceback."""


class UserInputError(DemoHubError, ValueError):
    """The input cannot be processed; the message says what to change.

    ``argument`` names the pipeline argument at fault (``check_inputs`` sets it), so a page can mark that input.
    """

    def __init__(self, message: str, argument: str | None = None):
        super().__init__(message)
        self.argument = argument



@contextmanager
def named_argument(name: str) -> Iterator[None]:
    """Name the argument a ``UserInputError`` raised inside is about (a shared check's sentence, e.g.
    ``shared.validation.check_text``'s, for the argument the caller knows)."""
    try:
        yield
    except UserInputError as error:
        raise UserInputError(str(error), argument=name) from None

def page_inputs(**names: str):
    """Declare on a page's check which of the page's inputs each argument name its errors carry is, where the two
    differ (``@page_inputs(num_inference_steps="steps")``): ``apps.ui.validator`` marks that input. One declaration
    instead of catching an error only to raise it again under another name (an endpoint's ``shared.api.Input``
    declares the same with ``argument=``)."""
    def mark(check):
        check.page_inputs = names
        return check

    return mark


class WeightsUnavailable(DemoHubError, FileNotFoundError):
    """Weights are neither bundled nor cached and cannot be downloaded now."""


class CheckpointError(WeightsUnavailable):
    """A weights file is truncated, corrupt, or carries more than plain tensors (refused)."""


class ModelTooLarge(DemoHubError, MemoryError):
    """A model needs more memory than the pool's whole budget; it is refused before anything is unloaded."""


def report(error: BaseException) -> str:
    """Log ``error`` in full under a new short id and return the id (what the visitor's message shows)."""
    error_id = secrets.token_hex(4)
    if isinstance(error, DemoHubError) and error.__cause__ is None:
        log.warning("error %s: %s: %s", error_id, type(error).__name__, error)
    else:
        log.error("error %s: %s: %s", error_id, type(error).__name__, error, exc_info=error)
    return error_id


def user_message(error: BaseException) -> str:
    """The sentence a page shows for ``error``: input errors verbatim, server-side errors with an id for the log."""
    if isinstance(error, UserInputError) or (isinstance(error, DemoHubError) and "(error id " in str(error)):
        return str(error)  # the visitor's own input, or a sentence whose cause is already in the log under its id
    error_id = report(error)
    if isinstance(error, DemoHubError):
        return f"{error} (error id {error_id})"
    return (f"Something went wrong on our side (error id {error_id}; the server log has the details). "
            "The demo is still running; please try again.")
