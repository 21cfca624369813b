"""Errors that reach the user as one line and exit code 2."""


class DdpfixError(Exception):
    """A problem with the user's input (syntax error, undecodable file, missing path)."""
