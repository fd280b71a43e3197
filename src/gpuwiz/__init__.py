"""gpuwiz: size, price and recommend GPU servers for ML training."""

import sys as _sys

__version__ = "0.1.0"

if _sys.dont_write_bytecode:  # PYTHONDONTWRITEBYTECODE: keep gpuwiz's bytecode in its cache folder (_pyc.py)
    from gpuwiz import _pyc

    _pyc.install()
