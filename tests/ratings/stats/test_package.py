# SPDX-License-Identifier: GPL-3.0-or-later
import subprocess
import sys
from pathlib import Path

import ratings.stats

REPO = Path(__file__).resolve().parents[3]


class TestPackage:
    def test_it_imports_without_django(self):
        code = (
            "import sys, ratings.stats; "
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'django'); "
            "print(','.join(loaded))"
        )
        out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == ""

    def test_every_public_name_is_exported(self):
        missing = [name for name in ratings.stats.__all__ if not hasattr(ratings.stats, name)]
        assert missing == []
        assert len(set(ratings.stats.__all__)) == len(ratings.stats.__all__)

    def test_every_module_stays_small(self):
        package = Path(ratings.stats.__file__).parent
        sizes = {p.name: len(p.read_text().splitlines()) for p in package.glob("*.py")}
        assert {name: n for name, n in sizes.items() if n > 400} == {}
