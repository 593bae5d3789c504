"""``python -m tokensmith``: the same command line as ``tokensmith``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
