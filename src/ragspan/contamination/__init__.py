"""Contamination checks: eval items copied into a corpus (leakage), duplicate documents across
corpora (overlap). Exact by default, on hashed-free exact n-gram ids held in numpy arrays."""
