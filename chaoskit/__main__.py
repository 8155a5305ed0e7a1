"""``python -m chaoskit``: the same as the ``chaoskit`` command."""

import sys

from chaoskit.cli._main import main

sys.exit(main())
