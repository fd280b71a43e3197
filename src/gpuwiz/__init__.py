"""gpuwiz: size, price and recommend GPU servers for ML training."""

__version__ = "0.1.0"
