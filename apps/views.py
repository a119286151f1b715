"""Sentences and answers drawn for a reader, for any front end: the precision line of a page, and for a demo's
declared ``view`` (``shared.api.Endpoint.view``) labels with score bars, a point on two axes, a timeline whose cells
are coloured by label. Strings of HTML that Gradio's Markdown and
Streamlit's ``st.html`` both show as they are; UI-free (no gradio, no streamlit). Every text taken from an answer is
escaped; sizes are relative, so a view reads at 720 px as at 1,400."""

from __future__ import annotations

import functools
import html
import re
import zlib
from collections.abc import Sequence

# What Markdown (Gradio's and Streamlit's) or HTML would read as structure inside a line: in a string a person or a
# model gave, each is written as a character reference, which both show as the character and neither parses
# (CommonMark: a reference never stands for a structural symbol). A line's first mark (# - + = > . after digits) too.
_INLINE_MARKUP = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;",  # html.escape's
                                **{c: f"&#{ord(c)};" for c in "\\`*_{}[]()!|~$"}})
_LINE_START_MARKUP = re.compile(r"^(\s*\d*)([#+=>.-])", re.M)


def text(value: object) -> str:
    """A string a person or a model gave (a SMILES, a tag, a label, a file name, an answer) for a Markdown or HTML view
    of any front end: it reads exactly as written, never as a link, emphasis, code or a tag. The one function for
    this; ``tests/hub/test_text.py`` renders every page's views of such strings."""
    escaped = str(value).translate(_INLINE_MARKUP)
    return _LINE_START_MARKUP.sub(lambda m: f"{m.group(1)}&#{ord(m.group(2))};", escaped)


BAR = "background:var(--color-accent, #6366f1);border-radius:3px"
CELL = "border:1px solid #e5e7eb;padding:3px 8px;text-align:left"


def precision_note(cpu_dtype: str | None, gpu_dtype: str | None, trade_off: str, quantizes: bool = False) -> str:
    """A page's settings line on precision (Markdown): what this server runs the demo in (``dtype_plan``; for a demo
    that ``quantizes``, the weights DEMOHUB_QUANTIZE chose on a CPU), then the demo's measured trade-off."""
    from shared.device import dtype_plan, quantize_setting

    plan = dtype_plan(cpu_dtype, gpu_dtype)
    if quantizes:
        try:
            mode = quantize_setting()
        except ValueError:  # the hub refused to start with it; a page built anyway says nothing false
            mode = "none"
        if mode != "none":
            plan += f"; on a CPU its weights {mode} (DEMOHUB_QUANTIZE={mode})"
    return f"**Precision:** {plan}. {trade_off}"


def colour(label: str) -> str:
    """A light colour of its own for each label (the same label: the same colour, in every view and every run)."""
    return f"hsl({zlib.crc32(label.encode()) % 360}, 70%, 88%)"


def bars(title: str, items: Sequence[tuple[str, float]], percent: bool = True) -> str:
    """A titled list of labels, each with its score as a number and a bar (``percent``: scores in [0, 1]; else
    values, drawn against the largest magnitude)."""
    top = max((abs(score) for _, score in items), default=1.0) or 1.0
    rows = []
    for label, score in items:
        share = score if percent else abs(score) / top
        shown = f"{score:.0%}" if percent else f"{score:+.2f}"
        rows.append(f'<div style="display:flex;gap:8px;align-items:center;margin:2px 0">'
                    f'<span style="flex:0 0 40%;overflow-wrap:anywhere">{text(label)}</span>'
                    f'<span style="flex:1;height:12px;background:#f3f4f6;border-radius:3px">'
                    f'<span style="display:block;height:12px;width:{max(0.0, min(1.0, share)) * 100:.1f}%;{BAR}">'
                    f'</span></span><span style="flex:0 0 3.5em;text-align:right">{shown}</span></div>')
    return f'<div class="view-bars"><strong>{text(title)}</strong>{"".join(rows)}</div>'


def point(title: str, x: tuple[str, float], y: tuple[str, float], size: int = 160) -> str:
    """A point on two axes through zero, the axes' names and the values beside it: boxes, not SVG, which both pages
    keep (Streamlit's ``st.html`` removes SVG). The axes reach the larger of 1 and the values' magnitude, so the
    point is always drawn, and the range is written on the plot."""
    reach = max(1.0, abs(x[1]), abs(y[1]))

    def at(value: float) -> float:  # percent from the low end of an axis, the dot's 12 px kept inside
        return 50 + value / reach * 45

    line = "position:absolute;background:#9ca3af"
    plot = (f'<div role="img" aria-label="{text(x[0])} {x[1]:+.2f}, {text(y[0])} {y[1]:+.2f}" '
            f'style="position:relative;width:{size}px;height:{size}px;border:1px solid #d1d5db;flex:none">'
            f'<div style="{line};left:0;right:0;top:50%;height:1px"></div>'
            f'<div style="{line};top:0;bottom:0;left:50%;width:1px"></div>'
            f'<span style="position:absolute;right:4px;top:calc(50% - 16px);font-size:10px">{text(x[0])} +</span>'
            f'<span style="position:absolute;left:calc(50% + 4px);top:2px;font-size:10px">{text(y[0])} +</span>'
            f'<span style="position:absolute;left:4px;bottom:2px;font-size:9px;color:#6b7280">±{reach:g}</span>'
            f'<span style="position:absolute;left:calc({at(x[1]):.1f}% - 6px);bottom:calc({at(y[1]):.1f}% - 6px);'
            'width:12px;height:12px;border-radius:50%;background:var(--color-accent, #6366f1)"></span></div>')
    return (f'<div class="view-point"><strong>{text(title)}</strong><div style="display:flex;gap:12px;'
            f'align-items:center;flex-wrap:wrap">{plot}<span>{text(x[0])} {x[1]:+.2f}<br>{text(y[0])} '
            f'{y[1]:+.2f}</span></div></div>')


def timeline(title: str, columns: Sequence[tuple[str, str]], rows: Sequence[tuple[str, dict[str, str]]]) -> str:
    """A table with a row per time span and a column per ``(key, heading)``; each cell is that span's label, coloured
    by label, so where a label holds and where it changes shows at a glance. It scrolls sideways where it is wider
    than the page."""
    head = "".join(f'<th style="{CELL}">{text(heading)}</th>' for _, heading in columns)
    body = "".join(
        f'<tr><td style="{CELL};white-space:nowrap">{text(span)}</td>' + "".join(
            f'<td style="{CELL};background:{colour(labels[key])}">{text(labels[key])}</td>' for key, _ in columns)
        + "</tr>" for span, labels in rows)
    return (f'<div class="view-timeline" style="margin-top:16px"><strong>{text(title)}</strong>'
            f'<div style="overflow-x:auto"><table style="border-collapse:collapse;border:none;margin:4px 0;'
            f'font-size:90%"><thead><tr><th style="{CELL}">time</th>{head}</tr></thead><tbody>{body}</tbody></table>'
            "</div></div>")


def notes(texts: Sequence[str]) -> str:
    return "".join(f'<p class="view-note">{text(note)}</p>' for note in texts)


def grid(parts: Sequence[str], width: str = "15rem") -> str:
    """Parts side by side, as many a row as fit at least ``width`` wide (one a row on a narrow page)."""
    return (f'<div style="display:grid;grid-template-columns:repeat(auto-fill,minmax({width},1fr));gap:12px 20px">'
            f'{"".join(parts)}</div>')


# A demo's card on a hub's landing page, Gradio's and Streamlit's: a picture, the title linking to its page, the
# tagline, the paper's links and what runs on this server. The grid puts as many cards in a row as fit 240 px each.
CARDS_CSS = """
.demo-cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(240px, 1fr)); gap: 1rem; }
.demo-card { border: 1px solid var(--border-color-primary, #e5e7eb); border-radius: 12px; padding: 1rem;
  min-width: 0; overflow-wrap: break-word; }
.demo-card h3 { margin: .6rem 0 .4rem 0; }
.demo-preview { display: flex; align-items: center; justify-content: center; height: 126px; overflow: hidden;
  border-radius: 8px; background: var(--background-fill-secondary, #f3f4f6); text-decoration: none !important;
  color: inherit !important; }
.demo-preview svg { max-width: 100%; height: 100%; }
.demo-card .state { font-size: .85em; opacity: .8; }
"""


def demo_card(demo_id: str, title: str, tagline: str, paper_url: str, code_url: str, state: str, preview: str,
              href: str) -> str:
    """One demo's card (``CARDS_CSS``): ``href`` its page's address, ``preview`` its picture's markup (ours)."""
    attribute = functools.partial(html.escape, quote=True)  # addresses and names in attributes; text as text
    return (
        f'<div class="demo-card" data-demo="{attribute(demo_id)}"><a class="demo-preview" href="{attribute(href)}" '
        f'tabindex="-1" aria-hidden="true">{preview}</a>'
        f'<h3><a href="{attribute(href)}">{text(title)}</a></h3><p>{text(tagline)}</p>'
        f'<p><a href="{attribute(paper_url)}">Paper</a> · <a href="{attribute(code_url)}">Official code</a></p>'
        f'<p class="state">{text(state)}</p></div>'
    )


def preview_of(demo) -> str:
    """A demo's card picture: the one it declares (``Demo.preview_html``), else its title drawn (``title_picture``);
    a failure leaves the box empty (the log says why), never the card."""
    if not demo.preview:
        return title_picture(demo)
    try:
        return demo.preview_html()
    except Exception:
        from shared.errors import log

        log.warning("the %s card's preview failed", demo.id, exc_info=True)
        return ""


# Soft tints of the colours a Space card may name (the Hugging Face Hub's colorFrom and colorTo), under dark letters.
TINTS = {"red": "#fee2e2", "yellow": "#fef9c3", "green": "#dcfce7", "blue": "#dbeafe", "indigo": "#e0e7ff",
         "purple": "#f3e8ff", "pink": "#fce7f3", "gray": "#f3f4f6"}


def title_picture(demo, width: int = 224, height: int = 126) -> str:
    """The card's picture of a demo that declares none: the paper's short name in large letters and what the demo
    does (its title after the colon) under it, on a gradient of its Space card's colours (SVG, every text escaped).
    Letter sizes follow the lengths (a bold capital is about 0.72 em wide), so a long name still fits the card:
    squeezed below 14 px, a longer line shortened."""
    name, _, does = (part.strip() for part in demo.title.partition(":"))
    name = name or demo.id
    size = min(44.0, (width - 24) / (0.72 * len(name)))
    squeeze = f' textLength="{width - 24}" lengthAdjust="spacingAndGlyphs"' if size < 14 else ""
    size = max(14.0, size)
    small = max(10.0, min(13.0, (width - 16) / (0.55 * max(1, len(does)))))
    room = int((width - 16) / (0.55 * small))
    if len(does) > room:
        does = does[:room - 1].rstrip() + "…"
    top, bottom = (TINTS.get(c, TINTS["gray"]) for c in demo.space_colours)
    letters = 'text-anchor="middle" font-family="ui-sans-serif, system-ui, sans-serif" fill="#1f2937"'
    lines = [f'<text x="{width / 2:g}" y="{height / 2 + (0 if does else size * 0.35):.1f}" font-size="{size:.1f}" '
             f'font-weight="700" {letters}{squeeze}>{text(name)}</text>']
    if does:
        lines.append(f'<text x="{width / 2:g}" y="{height / 2 + size * 0.35 + small * 1.8:.1f}" '
                     f'font-size="{small:.1f}" {letters} opacity="0.8">{text(does)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-label="{text(demo.title)}">'
            f'<defs><linearGradient id="tint-{text(demo.id)}" x1="0" y1="0" x2="1" y2="1">'
            f'<stop offset="0" stop-color="{top}"/><stop offset="1" stop-color="{bottom}"/></linearGradient></defs>'
            f'<rect width="{width}" height="{height}" rx="8" fill="url(#tint-{text(demo.id)})"/>{"".join(lines)}</svg>')


# An embed snippet's iframe height before its page reports its own (the Gradio pages do, and the snippet's script takes
# it; Streamlit's embedded view does not, and its iframe keeps this). One for every demo: no demo declares a height.
EMBED_HEIGHT = 900  # px


# Where the page's address is one only its visitor can reach, a page's embed section says so before its snippets, and
# how to get an address others can reach (Gradio's pages decide in the browser, Streamlit's from the request's Host;
# ADDRESS, REACH and DEMO are filled in).
LOCAL_ADDRESS_WARNING = (
    "This page's address, ADDRESS, works only REACH: pasted into your paper's page, the frame would stay empty for "
    "every other reader. For an address others can reach: put this demo on a Hugging Face Space "
    "(`demohub deploy DEMO --space-id OWNER/NAME`; the Space's page then gives its own snippets), open a temporary "
    "public link (`demohub serve --share`), or, where the hub has a public address of its own (a domain, a reverse "
    "proxy), start it with `--public-url https://your.domain` and these snippets use it.")


def local_reach(host: str) -> str:
    """"on this machine" or "inside this local network" for a host only those reach (a page's address, without its
    port), else "": loopback, private and link-local addresses, machine names without a domain, .local and friends."""
    import ipaddress

    name = host.strip("[]").lower()
    if not name:  # no address known (no request): nothing to say
        return ""
    if name == "localhost" or name.endswith(".localhost") or name == "0.0.0.0":
        return "on this machine"
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        if "." not in name or name.endswith((".local", ".internal", ".lan")):
            return "inside this local network"
        return ""
    if address.is_loopback:
        return "on this machine"
    if address.is_private or address.is_link_local:
        return "inside this local network"
    return ""
