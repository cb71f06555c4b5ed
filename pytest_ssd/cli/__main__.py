"""``python -m pytest_ssd.cli``."""

import sys

from pytest_ssd.cli import main

sys.exit(main())
