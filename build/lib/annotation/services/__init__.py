"""Writes for the annotation app: plain keyword-only functions, one job each."""
