"""Metric families: span (character offsets), rank (trec_eval-exact), and their registry."""
