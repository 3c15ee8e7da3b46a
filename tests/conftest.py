"""Test-suite configuration.

Under CI (``CI`` set), hypothesis runs derandomized: the same examples every run, so a
submission's result does not depend on luck; locally it keeps exploring new examples.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
