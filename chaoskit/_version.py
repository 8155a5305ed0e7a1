"""The version of chaoskit, in one place for the package metadata and ``chaoskit --version``."""

#: the release, as ``MAJOR.MINOR.PATCH``
__version__ = "0.1.0"
