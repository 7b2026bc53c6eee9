"""``python -m data_gen.facts``: check the fact files against their histories (data_gen/facts/check.py)."""

import sys

from .check import main

sys.exit(main())
