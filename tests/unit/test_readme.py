"""The README as issue 21 asks for it: it opens with exactly two commands (serve; run the whole
test suite), and every screenshot in docs/screenshots is linked from it, each page at desktop and
phone width, and every linked one exists (a refreshed or added screenshot is not left unlisted)."""
from __future__ import annotations

import re

from service.config import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
SHOTS = REPO_ROOT / "docs" / "screenshots"


def test_the_readme_opens_with_the_two_commands():
    head = README[:README.index("\n## ")]
    before_prose = head[:head.index("Both work")]
    blocks = re.findall(r"```bash\n(.*?)```", before_prose, re.DOTALL)
    commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]
    assert commands == ["scripts/run", "scripts/test"]
    assert re.sub(r"```bash\n.*?```", "", before_prose, flags=re.DOTALL).strip() == "# kernelgrade"


def test_every_screenshot_is_linked_at_both_widths_and_every_link_exists():
    linked = set(re.findall(r"\(docs/screenshots/([^)]+\.png)\)", README))
    present = {p.name for p in SHOTS.glob("*.png")}
    assert present and linked == present, (sorted(present - linked), sorted(linked - present))
    pages = {name.rsplit("-", 1)[0] for name in present}
    assert {f"{page}-{width}.png" for page in pages for width in ("desktop", "phone")} == present
