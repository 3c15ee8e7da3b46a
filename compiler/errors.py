"""The one family of passlens errors: every error passlens raises on purpose at its API
boundary (import, parse, verify, passes, interpret, build, load, check, render, CLI) is a
`PasslensError`, so `except PasslensError` catches what a bad input can cause and
nothing else. Each subclass keeps the builtin base it had (`ValueError` for bad input,
`RuntimeError` for a failed run) so existing `except ValueError` code still works.

A message is one line that says what is wrong with which input."""


class PasslensError(Exception):
    """Something passlens could not do with the input it was given; the message says why."""


class LimitError(PasslensError, ValueError):
    """An input exceeds one of passlens' size limits (a symbolic expression, a rank, an element
    count, a file member); the message names the limit and how to raise it if it can be."""
