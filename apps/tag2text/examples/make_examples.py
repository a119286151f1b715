"""Draws the example images shown on the Tag2Text page (our own drawings; no third-party images).

Run: python -m apps.tag2text.examples.make_examples
"""

from pathlib import Path

from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent
SIZE = (480, 360)


def beach() -> Image.Image:
    im = Image.new("RGB", SIZE, (120, 190, 240))
    d = ImageDraw.Draw(im)
    d.ellipse((330, 40, 410, 120), fill=(255, 220, 80))
    d.rectangle((0, 200, 480, 270), fill=(30, 100, 180))
    d.rectangle((0, 270, 480, 360), fill=(235, 215, 160))
    d.polygon([(120, 300), (160, 180), (200, 300)], fill=(230, 80, 60))
    d.line((160, 180, 160, 330), fill=(90, 60, 30), width=4)
    return im


def house() -> Image.Image:
    im = Image.new("RGB", SIZE, (170, 210, 250))
    d = ImageDraw.Draw(im)
    d.rectangle((0, 270, 480, 360), fill=(70, 160, 70))
    d.rectangle((140, 160, 320, 290), fill=(200, 170, 130))
    d.polygon([(120, 160), (230, 80), (340, 160)], fill=(150, 40, 40))
    d.rectangle((210, 220, 250, 290), fill=(100, 60, 30))
    d.rectangle((160, 190, 195, 225), fill=(250, 250, 200))
    d.rectangle((265, 190, 300, 225), fill=(250, 250, 200))
    d.rectangle((385, 200, 400, 290), fill=(110, 70, 40))
    d.ellipse((350, 130, 435, 215), fill=(40, 120, 40))
    return im


def car() -> Image.Image:
    im = Image.new("RGB", SIZE, (200, 200, 205))
    d = ImageDraw.Draw(im)
    d.rectangle((0, 250, 480, 360), fill=(60, 60, 65))
    d.line((0, 305, 480, 305), fill=(240, 240, 240), width=5)
    d.rounded_rectangle((90, 170, 390, 260), radius=20, fill=(200, 20, 30))
    d.polygon([(150, 170), (190, 120), (300, 120), (340, 170)], fill=(180, 20, 30))
    d.polygon([(170, 168), (200, 130), (240, 130), (240, 168)], fill=(170, 210, 240))
    d.polygon([(250, 168), (250, 130), (295, 130), (322, 168)], fill=(170, 210, 240))
    for x in (150, 330):
        d.ellipse((x - 32, 228, x + 32, 292), fill=(20, 20, 20))
        d.ellipse((x - 14, 246, x + 14, 274), fill=(160, 160, 160))
    return im


def fruit() -> Image.Image:
    im = Image.new("RGB", SIZE, (245, 240, 230))
    d = ImageDraw.Draw(im)
    d.rectangle((0, 250, 480, 360), fill=(150, 100, 60))
    d.ellipse((60, 180, 440, 300), fill=(240, 240, 245), outline=(180, 180, 190), width=3)
    d.ellipse((120, 150, 210, 240), fill=(210, 30, 40))
    d.ellipse((200, 140, 290, 230), fill=(250, 150, 20))
    d.ellipse((280, 150, 370, 240), fill=(120, 190, 40))
    d.line((165, 150, 170, 130), fill=(90, 60, 30), width=4)
    return im


def main() -> None:
    for name, draw in {"beach": beach, "house": house, "car": car, "fruit": fruit}.items():
        draw().save(HERE / f"{name}.png", optimize=True)


if __name__ == "__main__":
    main()
