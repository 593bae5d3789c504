"""Placeholder until the command lands."""

from __future__ import annotations

import argparse
from typing import Any


def add_command(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    return None
