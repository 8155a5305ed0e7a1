"""The recovery checks, public as ``chaoskit.checks``; they live in :mod:`chaoskit.grading.checks`."""

from chaoskit.grading.checks import *  # noqa: F403
from chaoskit.grading.checks import __all__ as __all__
