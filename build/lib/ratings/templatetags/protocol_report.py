"""How a report cell reads on the page: numbers to three decimals, lists joined, missing as a dash."""

import math
from typing import Any

from django import template

register = template.Library()


@register.filter
def protocol_cell(value: Any) -> str:
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "—" if not math.isfinite(value) else f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(protocol_cell(v) for v in value)
    return str(value)


@register.filter
def has_protocol_report(study: Any) -> bool:
    from ratings.protocols import has_report

    return has_report(study)
