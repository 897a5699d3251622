# SPDX-License-Identifier: GPL-3.0-or-later
"""The dataset card of a release bundle (``README.md``): YAML metadata a dataset hub reads, then prose.

The prose says only what the study holds or the researcher wrote on the card
(``ratings.models.DatasetCard``): who rated and how many, how they were
recruited, paid and screened as configured, the scale, and the agreement
with its interval; where the researcher wrote nothing, the card says so
rather than guessing.
"""

from __future__ import annotations

from typing import Any

import yaml

from annotation.models import Rater, Study

from .parts import release_parts


def size_category(n: int) -> str:
    """The size bucket dataset hubs use (``n<1K`` … ``n>1T``) for ``n`` rows."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")]
    bounds += [(10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]
    for bound, name in bounds:
        if n < bound:
            return name
    return "1B<n<10B"


def _kind_name(kind: str, n: int) -> str:
    """The rater kind's own label in running text, plural when ``n`` is not 1 ("3 crowdworkers", "1 LLM judge")."""
    try:
        label = str(Rater.Kind(kind).label)
    except ValueError:
        label = kind
    if not label[:2].isupper():
        label = label[:1].lower() + label[1:]
    return label if n == 1 else f"{label}s"


def _number(value: Any, digits: int = 3) -> str:
    return "undefined" if value is None else f"{value:.{digits}f}"


def dataset_card(*, study: Study, design: dict[str, Any], figures: dict[str, Any], parts: dict[str, Any]) -> str:
    from ..models import DatasetCard

    card = DatasetCard.objects.filter(study=study).first() or DatasetCard(study=study)
    judgments = sum(entry["judgments"] for entry in figures["counts"].values())
    metadata: dict[str, Any] = {
        "pretty_name": study.name,
        "license": card.licence.lower() if card.licence else "unknown",
        "size_categories": [size_category(judgments)],
        "task_categories": ["text-classification"],
        "tags": ["humor", "human-judgments", f"funnybone-{study.task_type}"],
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": "data/judgments.parquet"}]}],
    }
    if design.get("language"):
        metadata["language"] = [design["language"].split("-")[0].lower()]
    front = yaml.safe_dump(metadata, allow_unicode=True, sort_keys=False)
    lines = [f"---\n{front}---", "", f"# {study.name}", ""]
    if study.description:
        lines += [study.description.strip(), ""]
    lines += [
        f"Human judgments of humor collected with Funnybone: task {design['task_title']} "
        f"({design['task_type']}), {design['items']} items, {judgments} judgments.",
        "",
        "## Raters",
        "",
    ]
    for kind, entry in figures["counts"].items():
        lines.append(f"- {entry['raters']} {_kind_name(kind, entry['raters'])}, {entry['judgments']} judgments")
    lines += [
        "",
        f"Recruitment: {design['recruitment_label']}. Each item was to be rated by {design['quota_per_item']} people "
        f"(item order: {design['item_order'].replace('_', ' ')}).",
        "",
        f"**Recruitment notes:** {card.recruitment_notes.strip() or 'none written by the researcher.'}",
        "",
        f"**Pay:** {card.pay.strip() or 'not stated by the researcher.'}",
        "",
        "## Screening",
        "",
    ]
    screening = design["screening"]
    if screening["attention_check_rate"]:
        policy = "ends the session" if screening["attention_check_policy"] == "end" else "flags the rater"
        lines.append(
            f"- Attention checks on {screening['attention_check_rate']:.0%} of a rater's items; "
            f"failing more than {screening['attention_check_max_failures']} {policy}."
        )
    else:
        lines.append("- No attention checks.")
    if screening["min_seconds_per_item"]:
        lines.append(f"- Answers faster than {screening['min_seconds_per_item']:g} s per item are flagged.")
    lines += ["", "## Scale", ""]
    scale = design["scale"]
    if scale.get("codes"):
        for code, name in zip(scale["codes"], scale["names"], strict=True):
            lines.append(f"- {name}" if name.startswith(f"{code:g}") else f"- {code:g}: {name}")
    else:
        lines.append(f"- {scale.get('note', 'no numeric coding')}")
    lines += ["", "## Agreement among the human raters", ""]
    agreement = figures.get("human_agreement")
    if agreement:
        level = "nominal" if scale.get("nominal") else "ordinal"
        interval = (figures.get("intervals") or {}).get("krippendorff_alpha")
        alpha = agreement["krippendorff_alpha"][level]
        stated = f"Krippendorff's alpha ({level}): {_number(alpha)}"
        if interval and interval.get("low") is not None:
            stated += (
                f", {interval['confidence']:.0%} interval {_number(interval['low'])} to "
                f"{_number(interval['high'])} ({interval['method']})"
            )
        lines += [
            f"- {stated}.",
            f"- Exact agreement (share of items where everyone gave the same value): "
            f"{_number(agreement['exact_agreement'])}.",
            f"- From {agreement['n_ratings']} ratings of {agreement['n_items']} items by "
            f"{agreement['n_raters']} people.",
        ]
    else:
        lines += [f"- {note}" for note in figures.get("notes", [])] or ["- Not computed."]
    for part in release_parts():
        if part.card and part.name in parts:
            section = part.card(parts[part.name])
            if section:
                lines += ["", section.rstrip()]
    lines += [
        "",
        "## Files",
        "",
        "- `data/judgments.csv`, `data/judgments.parquet`: one row per judgment (columns: docs/exports.md of Funnybone).",
        "- `study.json`: the design (task, scale codes, quotas, screening).",
        "- `figures.json`: the figures above as computed by Funnybone.",
        "- `recompute.py`: recomputes `figures.json` from the data files alone "
        "(`pip install pandas krippendorff`, then `python recompute.py --check`).",
    ]
    lines += [f"- `{part.name}`: {part.description}" for part in release_parts() if part.name in parts]
    lines += ["", "## Licence and citation", "", f"Licence: {card.licence or 'not stated by the researcher'}."]
    if card.citation.strip():
        lines += ["", "```", card.citation.strip(), "```"]
    return "\n".join(lines) + "\n"
