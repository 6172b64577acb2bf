"""Readers and writers for every file ragspan touches; each error names the file and line."""
