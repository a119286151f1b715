"""Reading and writing files."""

import csv
import json
from pathlib import Path


def read_json(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def write_lines(path, lines):
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def csv_rows(path):
    """Each row of a CSV file as a dict keyed by the header."""
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def largest_files(folder, n=10):
    """The n largest files under folder, biggest first."""
    files = [p for p in Path(folder).rglob("*") if p.is_file()]
    return sorted(files, key=lambda p: p.stat().st_size, reverse=True)[:n]
