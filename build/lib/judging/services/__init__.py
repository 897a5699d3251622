"""Writes for the judging app: plain keyword-only functions, one job each."""
