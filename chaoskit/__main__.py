import sys

from chaoskit.cli._main import main

sys.exit(main())
