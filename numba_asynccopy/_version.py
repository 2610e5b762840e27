"""The package's version: one line every layer may import (the compile
cache key, the benchmarks' report, the build) without importing the package
face."""

__version__ = "0.1.0"
