"""Images with text drawn by Pillow, for OCR tests, and the machine's CJK font if it has one."""

from __future__ import annotations

import io
import shutil
import subprocess
from functools import cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

# Where Debian/Ubuntu font packages put a CJK font (fonts-wqy-microhei, fonts-noto-cjk, ...).
_KNOWN_CJK_FONTS = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
)

Placed = tuple[str, tuple[int, int]]  # text and where its top-left corner is drawn


@cache
def cjk_font_path() -> str | None:
    """A font file that can draw Chinese, or None when the machine has none."""
    for path in _KNOWN_CJK_FONTS:
        if Path(path).is_file():
            return path
    if shutil.which("fc-list") is None:
        return None
    found = subprocess.run(
        ["fc-list", ":lang=zh", "file"], capture_output=True, text=True, check=False
    ).stdout.split("\n")
    files = [line.split(":")[0].strip() for line in found if line.strip()]
    return files[0] if files else None


def font(size: int, cjk: bool = False) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    path = cjk_font_path() if cjk else None
    if path is not None:
        return ImageFont.truetype(path, size)
    return ImageFont.load_default(size=size)


def draw_text(
    placed: list[Placed], size: tuple[int, int] = (1000, 400), font_size: int = 36,
    cjk: bool = False,
) -> tuple[Image.Image, list[tuple[float, float, float, float]]]:
    """A white RGB image with black text; also each text's drawn bounding box in pixels."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    face = font(font_size, cjk)
    boxes = []
    for text, origin in placed:
        draw.text(origin, text, fill="black", font=face)
        boxes.append(tuple(float(value) for value in draw.textbbox(origin, text, font=face)))
    return image, boxes  # type: ignore[return-value]


def encoded(image: Image.Image, format: str = "PNG", **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, format=format, **options)
    return out.getvalue()
