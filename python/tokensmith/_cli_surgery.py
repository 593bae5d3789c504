"""``tokensmith add-tokens | extend | prune | merge | resize | check``: changing a
vocabulary from the command line, and proving the change kept the old ids.

Registered by :func:`tokensmith.cli.build_parser`; errors are
:class:`tokensmith.cli.CommandError` or a :class:`tokensmith.TokenizerError`
(one line, exit status 2).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_commands"]


def add_commands(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    """Add the vocabulary-change commands to the ``tokensmith`` parser."""
    from ._cli_check import add_command as add_check
    from ._cli_prune import add_command as add_prune

    add_prune(sub, formatter)
    add_check(sub, formatter)
