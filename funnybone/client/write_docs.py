# SPDX-License-Identifier: GPL-3.0-or-later
"""Write docs/client.md from the client's code: every public method with its signature and docstring.

    python funnybone/client/write_docs.py           # rewrite docs/client.md
    python funnybone/client/write_docs.py --check   # exit 1 if docs/client.md is not what the code says

tests/client/test_client.py runs the check, so the page cannot fall behind the code.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE.parents[1] / "docs" / "client.md"
sys.path.insert(0, str(HERE))

import funnybone_client  # noqa: E402
from funnybone_client import client as module  # noqa: E402

SECTION = re.compile(r"^    # -- (?P<title>.+?) -+$")


def _doc(obj: object) -> str:
    return inspect.cleandoc(obj.__doc__ or "")


def _signature(name: str, function: object) -> str:
    signature = str(inspect.signature(function))  # type: ignore[arg-type]
    # The annotations are strings (``from __future__ import annotations``): shown without their quotes.
    signature = signature.replace("'", "").replace("<built-in function sleep>", "time.sleep")
    return f"{name}{signature.replace('(self, ', '(').replace('(self)', '()')}"


def render() -> str:
    lines = [
        "# The Python client, method by method",
        "",
        "<!-- Written by funnybone/client/write_docs.py from the code; do not edit by hand. -->",
        "",
        "Install it with `pip install ./funnybone/client` (add `[pandas]` for `judgments()`); the",
        "README beside it (`funnybone/client/README.md`) has a worked example, `docs/api.md` the API itself.",
        "",
        _doc(funnybone_client),
        "",
        "## `Funnybone`",
        "",
        f"`{_signature('Funnybone', module.Funnybone.__init__)}`",
        "",
        _doc(module.Funnybone),
        "",
    ]
    source = inspect.getsource(module.Funnybone).splitlines()
    start = inspect.getsourcelines(module.Funnybone)[1]
    sections = [(start + i, m["title"]) for i, line in enumerate(source) if (m := SECTION.match(line))]
    methods = [
        (inspect.getsourcelines(function)[1], name, function)
        for name, function in vars(module.Funnybone).items()
        if inspect.isfunction(function) and not name.startswith("_") and name != "close"
    ]
    operations = {method: operation for operation, method in module.OPERATIONS.items()}
    current = None
    for line, name, function in sorted(methods, key=lambda row: row[0]):
        title = next((t for at, t in reversed(sections) if at < line), "other")
        if title != current:
            lines += [f"### {title[0].upper()}{title[1:]}", ""]
            current = title
        lines += [f"#### `{_signature(name, function)}`", ""]
        if name in operations:
            lines += [f"Operation `{operations[name]}`.", ""]
        lines += [_doc(function), ""]
    lines += ["## Errors", ""]
    for error in (module.FunnyboneError, module.UnexpectedRedirect, module.ForeignAddress, module.JobFailed):
        lines += [f"### `{error.__name__}`", "", _doc(error), ""]
    lines += [
        "## Helpers",
        "",
        f"### `{_signature('retry_after', module.retry_after)}`",
        "",
        _doc(module.retry_after),
        "",
    ]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is out of date: run python funnybone/client/write_docs.py")
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
