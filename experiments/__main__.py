"""``python -m experiments``: the commands of the paper's reproduction and the studies."""

import sys

from experiments.cli import main

if __name__ == "__main__":
    sys.exit(main())
