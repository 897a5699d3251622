# SPDX-License-Identifier: GPL-3.0-or-later
"""Exports of a study's judgments: an XLSX workbook, long-format CSV and JSON Lines."""
