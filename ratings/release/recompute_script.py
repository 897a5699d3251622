#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Recompute the figures of this Funnybone release bundle from its data files alone.

    python recompute.py                 # print the recomputed figures as JSON
    python recompute.py --check         # compare them with figures.json; exit status 1 on any difference

Needs Python 3.10+, pandas, numpy and krippendorff (pip install pandas krippendorff).
Reads data/judgments.csv (one row per judgment, values exactly as stored) and
study.json (the scale's codes). Independent of Funnybone's own code: alpha comes
from the krippendorff package; the rest is written out below.

Which judgments count (the same rule as the study's analysis page, "humans"):
judgments of people (rater_kind expert or crowd) with status ok, on regular
items (not attention checks), with a numeric coding; where a person judged an
item twice, the earliest judgment (lowest judgment_id).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
PEOPLE = ("expert", "crowd")
LEVELS = ("nominal", "ordinal", "interval", "ratio")
TOLERANCE = 1e-9


def number(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def recompute(folder: Path) -> dict:
    design = json.loads((folder / "study.json").read_text(encoding="utf-8"))
    rows = pd.read_csv(folder / "data" / "judgments.csv", dtype=str, keep_default_na=False)
    counts = {}
    for kind, group in rows.groupby("rater_kind"):
        counts[kind] = {"raters": int(group["rater_id"].nunique()), "judgments": int(len(group))}
    figures = {"counts": dict(sorted(counts.items())), "human_agreement": None, "items": None}
    scale = design["scale"]
    if not scale.get("codes"):
        return figures
    people = rows[
        rows["rater_kind"].isin(PEOPLE)
        & (rows["status"] == "ok")
        & (rows["item_is_attention_check"] == "false")
        & (rows["numeric"] != "")
    ].copy()
    people["judgment_id"] = people["judgment_id"].astype(int)
    people["numeric"] = people["numeric"].astype(float)
    people = people.sort_values("judgment_id").drop_duplicates(["item", "rater_id"], keep="first")
    item_order = list(dict.fromkeys(rows.loc[rows["item"].isin(set(people["item"])), "item"]))
    matrix = people.pivot(index="item", columns="rater_id", values="numeric").reindex(item_order)
    values = matrix.to_numpy(dtype=float)
    if values.shape[1] >= 2 and not np.isnan(values).all():
        codes = np.sort(np.array(scale["codes"], dtype=float))
        alpha = {}
        for level in LEVELS:
            if scale["nominal"] and level != "nominal" or level == "ratio" and (codes < 0).any():
                alpha[level] = None
            else:
                alpha[level] = number(
                    krippendorff.alpha(reliability_data=values.T, level_of_measurement=level, value_domain=codes)
                )
        rated = (~np.isnan(values)).sum(axis=1)
        paired = values[rated >= 2]
        spread = np.nanmax(paired, axis=1) - np.nanmin(paired, axis=1)
        figures["human_agreement"] = {
            "n_items": int(values.shape[0]),
            "n_raters": int(values.shape[1]),
            "n_ratings": int((~np.isnan(values)).sum()),
            "krippendorff_alpha": alpha,
            "exact_agreement": number(float((spread == 0).mean())) if spread.size else None,
        }
    figures["items"] = [
        {
            "item": item,
            "n": int((~np.isnan(row)).sum()),
            "mean": number(float(np.nanmean(row))) if (~np.isnan(row)).any() else None,
            "median": number(float(np.nanmedian(row))) if (~np.isnan(row)).any() else None,
        }
        for item, row in zip(matrix.index, values, strict=True)
    ]
    return figures


def differences(stated, recomputed, path: str = "") -> list[str]:
    """Where two JSON values differ (numbers within TOLERANCE are equal)."""
    if isinstance(stated, dict) and isinstance(recomputed, dict):
        found = []
        for key in sorted(set(stated) | set(recomputed)):
            found += differences(stated.get(key), recomputed.get(key), f"{path}.{key}" if path else key)
        return found
    if isinstance(stated, list) and isinstance(recomputed, list):
        if len(stated) != len(recomputed):
            return [f"{path}: {len(stated)} entries stated, {len(recomputed)} recomputed"]
        found = []
        for index, (a, b) in enumerate(zip(stated, recomputed, strict=True)):
            found += differences(a, b, f"{path}[{index}]")
        return found
    numbers = (int, float)
    if isinstance(stated, numbers) and isinstance(recomputed, numbers) and not isinstance(stated, bool):
        if math.isclose(stated, recomputed, rel_tol=TOLERANCE, abs_tol=TOLERANCE):
            return []
    elif stated == recomputed:
        return []
    return [f"{path}: stated {stated!r}, recomputed {recomputed!r}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with figures.json; exit 1 on a difference")
    parser.add_argument("--folder", type=Path, default=HERE, help="the unpacked bundle (default: this script's)")
    args = parser.parse_args()
    recomputed = recompute(args.folder)
    if not args.check:
        print(json.dumps(recomputed, indent=2, ensure_ascii=False))
        return 0
    stated = json.loads((args.folder / "figures.json").read_text(encoding="utf-8"))
    found = []
    for key in recomputed:
        found += differences(stated.get(key), recomputed[key], key)
    for line in found:
        print("DIFFERS", line)
    print(f"{'differences: ' + str(len(found)) if found else 'every figure recomputed equals figures.json'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
