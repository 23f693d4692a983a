"""Chromium on this machine draws Chinese with a real font (scripts/setup --test installs
fonts-noto-cjk): without one, every character is the same empty box, on the pages and in the
README screenshots."""
from __future__ import annotations

# Draws each character with the page's own font on a canvas and returns the pixels: characters
# that no installed font has all come out as the same box.
DRAW = """(chars) => chars.map((ch) => {
  const canvas = document.createElement('canvas');
  canvas.width = 48; canvas.height = 48;
  const ctx = canvas.getContext('2d');
  ctx.font = '32px ' + getComputedStyle(document.body).fontFamily;
  ctx.fillText(ch, 4, 38);
  return Array.from(ctx.getImageData(0, 0, 48, 48).data).join(',');
})"""


def test_chinese_characters_are_drawn_as_glyphs_not_boxes(page, service):
    page.goto(f"{service.url}/review/login")
    wei, tong, guo, missing = page.evaluate(DRAW, ["未", "通", "过", "\ue000"])  # U+E000: private use, in no font
    assert len({wei, tong, guo}) == 3, "未, 通 and 过 are drawn alike: no CJK font (apt-get install fonts-noto-cjk)"
    assert missing not in (wei, tong, guo)
