"""Importers for public benchmarks: each returns an EvalBuild whose every span is verified."""
