"""``python -m toolchaos``: the ``toolchaos`` command."""

import sys

from toolchaos.cli import main

sys.exit(main())
