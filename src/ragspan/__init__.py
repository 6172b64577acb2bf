"""ragspan: a regression gate for retrieval in RAG systems, decided by character-span arithmetic."""

__version__ = "0.1.0"

__all__ = ["__version__"]
