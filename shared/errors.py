"""Errors a person can act on, and one way to show them in a page."""

from __future__ import annotations


class DemoHubError(Exception):
    """Base class: the message is a sentence meant for a person, never a traceback."""


class UserInputError(DemoHubError, ValueError):
    """The input cannot be processed; the message says what to change."""


class WeightsUnavailable(DemoHubError, FileNotFoundError):
    """Weights are neither bundled nor cached and cannot be downloaded now."""


def user_message(error: BaseException) -> str:
    """The sentence a page shows for ``error``: our own messages verbatim, anything else summarised."""
    if isinstance(error, DemoHubError):
        return str(error)
    return f"Something went wrong on our side ({type(error).__name__}). The demo is still running; please try again."


def as_gradio_error(error: BaseException):
    """Turn any exception into a ``gr.Error`` carrying one readable sentence (gradio imported lazily)."""
    import gradio as gr

    if isinstance(error, gr.Error):
        return error
    return gr.Error(user_message(error), print_exception=not isinstance(error, DemoHubError))


class CheckpointError(WeightsUnavailable):
    """A weights file is truncated, corrupt, or carries more than plain tensors (refused)."""
