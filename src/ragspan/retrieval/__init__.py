"""The retrieval pipeline behind ``ragspan run-retriever`` (optional extra ``retrieval``).

Nothing in the core imports this package; chunking is pure Python and needs no extra.
"""
