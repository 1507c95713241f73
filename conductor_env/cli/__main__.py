"""``python -m conductor_env.cli``: the ``conductor-env`` command without its script."""

import sys

from conductor_env.cli import main

sys.exit(main())
