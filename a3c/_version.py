"""The package's version: a leaf module, so that what records it (checkpoints, exported files) imports
it without importing the package's top."""

__version__ = "0.32.0"
