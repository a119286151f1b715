"""Drawing layouts over images, and exporting generated images as a COCO-format detection dataset (UI-free)."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import date
from pathlib import Path
from typing import BinaryIO

from PIL import Image, ImageDraw

from apps.geodiffusion.layout import CLASSES, Layout

# The ten colours of the official drawing helper's palette.
PALETTE = [(30, 118, 179), (255, 126, 13), (43, 159, 43), (213, 38, 39), (147, 102, 188), (139, 85, 74),
           (226, 118, 193), (126, 126, 126), (187, 188, 33), (22, 189, 206)]


def pixel_box(box, width: int, height: int) -> tuple[float, float, float, float]:
    """Normalised corners -> pixel corners."""
    return box.x1 * width, box.y1 * height, box.x2 * width, box.y2 * height


def draw_layout(image: Image.Image | None, layout: Layout, size: int = 384) -> Image.Image:
    """The layout's boxes and labels over ``image`` (or over a white canvas when ``image`` is None)."""
    canvas = (image.convert("RGB").copy() if image is not None else Image.new("RGB", (size, size), "white"))
    width, height = canvas.size
    draw = ImageDraw.Draw(canvas)
    line = max(1, round(min(width, height) / 128))
    for i, box in enumerate(layout.boxes):
        color = PALETTE[i % len(PALETTE)]
        x1, y1, x2, y2 = pixel_box(box, width - 1, height - 1)
        draw.rectangle((x1, y1, x2, y2), outline=color, width=line)
        text = box.label
        left, top, right, bottom = draw.textbbox((x1, y1), text)
        ty = y1 - (bottom - top) - 2 if y1 - (bottom - top) - 2 >= 0 else y1
        draw.rectangle((x1, ty, x1 + right - left + 4, ty + bottom - top + 2), fill=color)
        draw.text((x1 + 2, ty), text, fill="white")
    return canvas


def coco_dataset(images: list[Image.Image] | tuple[Image.Image, ...], layout: Layout, dataset: str,
                 prompt: str = "") -> dict:
    """COCO detection annotations: every image carries the layout's boxes in pixels ([x, y, width, height]).

    Category ids are 1 + the class's index in the checkpoint's class list (nuImages 10, COCO-Stuff 172).
    """
    classes = CLASSES[dataset]
    records, annotations = [], []
    for image_id, image in enumerate(images, start=1):
        width, height = image.size
        records.append({"id": image_id, "file_name": f"{image_id:06d}.png", "width": width, "height": height})
        for box in layout.boxes:
            x1, y1, x2, y2 = pixel_box(box, width, height)
            annotations.append({
                "id": len(annotations) + 1, "image_id": image_id, "category_id": classes.index(box.label) + 1,
                "bbox": [round(x1, 2), round(y1, 2), round(x2 - x1, 2), round(y2 - y1, 2)],
                "area": round((x2 - x1) * (y2 - y1), 2), "iscrowd": 0,
            })
    return {
        "info": {"description": f"GeoDiffusion-generated images ({dataset})", "prompt": prompt,
                 "date_created": date.today().isoformat(), "layout": layout.to_dict()},
        "licenses": [],
        "images": records,
        "annotations": annotations,
        "categories": [{"id": i + 1, "name": name, "supercategory": dataset} for i, name in enumerate(classes)],
    }


def export_coco_zip(images: list[Image.Image] | tuple[Image.Image, ...], layout: Layout, dataset: str,
                    path: str | Path | BinaryIO, prompt: str = "") -> Path | BinaryIO:
    """Write ``images/000001.png ...`` and ``annotations/instances.json`` into a zip at ``path`` (or into a binary
    file object); returns where it went."""
    path = path if hasattr(path, "write") else Path(path)
    coco = coco_dataset(images, layout, dataset, prompt)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for record, image in zip(coco["images"], images, strict=True):
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            zf.writestr(f"images/{record['file_name']}", buffer.getvalue())
        zf.writestr("annotations/instances.json", json.dumps(coco, indent=1))
    return path
