"""``python -m biasbound ...``: the ``biasbound`` command line (:func:`biasbound.cli.main`), its one entry point."""

import sys

from biasbound.cli import main

sys.exit(main())
