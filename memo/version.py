"""memo's version, defined once: ``memo.__version__`` re-exports it, and a lower layer (an
export's header, ``memo.ops.export``) reads it here without importing the facade."""

__version__ = "0.1.0"
