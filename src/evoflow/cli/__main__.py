"""``python -m evoflow.cli``: the same as the ``evoflow`` command."""

import sys

from evoflow.cli import main

sys.exit(main())
