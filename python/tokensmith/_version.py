"""The package version, in a module of its own so that any module can name it
without importing the package (``tokensmith/__init__.py`` imports every module)."""

__version__ = "0.1.0"
