"""Reads, split by who reads: the researcher's pages and API (:mod:`.researcher`) and the
annotator's own pages (:mod:`.annotator`). Import from the one you need."""
