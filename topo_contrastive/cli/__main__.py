"""``python -m topo_contrastive.cli``: the ``topo-contrastive`` command line."""

import sys

from topo_contrastive.cli import main

if __name__ == "__main__":
    sys.exit(main())
