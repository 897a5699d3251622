# SPDX-License-Identifier: GPL-3.0-or-later
"""The crowd platform's side of a study: Prolific through its API, and participants' withdrawal (docs/crowd.md).

It sits above the other apps (it calls out through ``judging.outbound`` and keeps the
token with ``judging.keys``); Mechanical Turk's entry is the annotator's (``annotation.mturk``)
and pseudonyms and retention are ``annotation.privacy``.
"""
