"""What the page shows, as HTML strings: the RDKit 2D depiction and a self-contained rotating 3D viewer.

The 3D viewer is an inline SVG drawn in Python (so it shows without JavaScript) plus ~40 lines of our own JS
(``VIEWER_JS``, run by ``gr.HTML(js_on_load=...)``) that redraws it on drag and slowly spins it; no CDN, no library.
No gradio or torch here; rdkit is imported inside the functions.
"""

from __future__ import annotations

import html
import json
import math

from apps.molm3d.conformer import Conformer, method
from apps.views import text

SIZE = 360
COLORS = {"C": "#505050", "N": "#3050f8", "O": "#e01010", "S": "#c8a000", "P": "#ff8000", "F": "#60c040",
          "Cl": "#20b020", "Br": "#a62929", "I": "#940094", "B": "#ffb5b5", "Si": "#b09070"}
DEFAULT_COLOR = "#d040a0"
START_ANGLES = (0.35, 0.6)


def depiction_svg(conf: Conformer, width: int = 420, height: int = 300) -> str:
    """RDKit's 2D drawing of the molecule (hydrogens hidden), as an SVG string."""
    from rdkit import Chem

    return _draw(Chem.Mol(conf.mol), width, height)


def smiles_svg(smiles: str, width: int, height: int) -> str:
    """RDKit's 2D drawing of a (trusted, bundled) SMILES."""
    from rdkit import Chem

    return _draw(Chem.MolFromSmiles(smiles), width, height)


def _draw(mol, width: int, height: int) -> str:
    from rdkit.Chem import rdDepictor
    from rdkit.Chem.Draw import rdMolDraw2D

    mol.RemoveAllConformers()
    rdDepictor.Compute2DCoords(mol)
    drawer = rdMolDraw2D.MolDraw2DSVG(width, height)
    try:
        rdMolDraw2D.PrepareAndDrawMolecule(drawer, mol)
    except Exception:  # unsanitisable input from a file: draw it as written
        drawer.DrawMolecule(mol)
    drawer.FinishDrawing()
    svg = drawer.GetDrawingText()
    svg = svg[svg.find("<svg"):]
    return svg.replace("<svg ", "<svg style='max-width:100%;height:auto' ", 1)  # scale down in narrow columns


def viewer_data(conf: Conformer) -> dict:
    """Heavy atoms (symbol, centred xyz, colour) and bonds (i, j, order) for the 3D viewer."""
    coords = conf.coordinates[1:-1].astype(float).round(3).tolist()
    bonds = []
    if conf.mol is not None and conf.mol.GetNumAtoms() == len(conf.symbols):
        bonds = [[b.GetBeginAtomIdx(), b.GetEndAtomIdx(), b.GetBondTypeAsDouble()] for b in conf.mol.GetBonds()]
    atoms = [{"s": s, "xyz": xyz, "c": COLORS.get(s, DEFAULT_COLOR)} for s, xyz in zip(conf.symbols, coords,
                                                                                          strict=True)]
    return {"atoms": atoms, "bonds": bonds}


def _project(data: dict, ax: float, ay: float) -> list[tuple[float, float, float]]:
    """Rotate about x then y and scale to the canvas; the same maths as ``VIEWER_JS``."""
    pts = [a["xyz"] for a in data["atoms"]]
    radius = max((math.sqrt(x * x + y * y + z * z) for x, y, z in pts), default=1.0) or 1.0
    scale = 0.42 * SIZE / radius
    out = []
    for x, y, z in pts:
        y, z = y * math.cos(ax) - z * math.sin(ax), y * math.sin(ax) + z * math.cos(ax)
        x, z = x * math.cos(ay) + z * math.sin(ay), -x * math.sin(ay) + z * math.cos(ay)
        out.append((SIZE / 2 + x * scale, SIZE / 2 - y * scale, z))
    return out


def _svg_body(data: dict, ax: float, ay: float) -> str:
    pts = _project(data, ax, ay)
    parts = []
    for i, j, order in data["bonds"]:
        (x1, y1, _), (x2, y2, _) = pts[i], pts[j]
        parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#999" '
                     f'stroke-width="{2 + 1.5 * (order - 1):.1f}"/>')
    for k in sorted(range(len(pts)), key=lambda k: pts[k][2]):
        x, y, z = pts[k]
        atom = data["atoms"][k]
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{7 + z * 0.4:.1f}" fill="{atom["c"]}" stroke="#222" '
                     f'stroke-width="0.6"><title>{html.escape(atom["s"])}{k + 1}</title></circle>')
    return "".join(parts)


def viewer_html(conf: Conformer) -> str:
    """The 3D viewer: a static SVG projection that ``VIEWER_JS`` makes rotatable."""
    data = viewer_data(conf)
    payload = html.escape(json.dumps(data, separators=(",", ":")), quote=True)
    return (f'<div class="molm3d-viewer" data-mol="{payload}" style="text-align:center">'
            f'<svg viewBox="0 0 {SIZE} {SIZE}" width="{SIZE}" height="{SIZE}" role="img" '
            f'aria-label="3D conformer of {html.escape(conf.smiles[:80])}" style="touch-action:none;cursor:grab;'
            f'max-width:100%;height:auto;background:#fafafa;border-radius:8px">{_svg_body(data, *START_ANGLES)}</svg>'
            f'<div style="font-size:.8em;opacity:.7">Drag to rotate · {conf.num_heavy_atoms} heavy atoms '
            f'(RDKit ETKDG + MMFF conformer, hydrogens hidden)</div></div>')


VIEWER_JS = """
function molm3dView() {
  // One viewer at a time per component: Gradio may patch a new value into the same nodes, so the previous
  // molecule's timer and listeners stop here (else two molecules would take turns in one picture).
  if (element.molm3dStop) element.molm3dStop();
  const host = element.querySelector('.molm3d-viewer');
  if (!host) return;
  const data = JSON.parse(host.dataset.mol), svg = host.querySelector('svg'), S = __SIZE__;
  const listening = new AbortController(), on = {signal: listening.signal};
  let ax = __AX__, ay = __AY__, drag = false, spin = true, lx = 0, ly = 0;
  const r = Math.max(1e-6, ...data.atoms.map(a => Math.hypot(...a.xyz))), k = 0.42 * S / r;
  function draw() {
    const p = data.atoms.map(a => {
      let [x, y, z] = a.xyz;
      [y, z] = [y * Math.cos(ax) - z * Math.sin(ax), y * Math.sin(ax) + z * Math.cos(ax)];
      [x, z] = [x * Math.cos(ay) + z * Math.sin(ay), -x * Math.sin(ay) + z * Math.cos(ay)];
      return [S / 2 + x * k, S / 2 - y * k, z];
    });
    let out = data.bonds.map(([i, j, o]) => `<line x1="${p[i][0]}" y1="${p[i][1]}" x2="${p[j][0]}" ` +
      `y2="${p[j][1]}" stroke="#999" stroke-width="${2 + 1.5 * (o - 1)}"/>`).join('');
    [...p.keys()].sort((a, b) => p[a][2] - p[b][2]).forEach(i => {
      out += `<circle cx="${p[i][0]}" cy="${p[i][1]}" r="${7 + p[i][2] * 0.4}" fill="${data.atoms[i].c}" ` +
        `stroke="#222" stroke-width="0.6"><title>${data.atoms[i].s}${i + 1}</title></circle>`;
    });
    svg.innerHTML = out;
  }
  svg.addEventListener('pointerdown', e => { drag = true; spin = false; lx = e.clientX; ly = e.clientY;
    svg.setPointerCapture(e.pointerId); }, on);
  svg.addEventListener('pointermove', e => { if (!drag) return; ay += (e.clientX - lx) * 0.01;
    ax += (e.clientY - ly) * 0.01; lx = e.clientX; ly = e.clientY; draw(); }, on);
  svg.addEventListener('pointerup', () => { drag = false; }, on);
  const timer = setInterval(() => { if (!document.body.contains(svg)) return element.molm3dStop();
    if (spin) { ay += 0.015; draw(); } }, 50);
  element.molm3dStop = () => { clearInterval(timer); listening.abort(); element.molm3dStop = null; };
  draw();
}
molm3dView();
watch('value', molm3dView);
""".replace("__SIZE__", str(SIZE)).replace("__AX__", str(START_ANGLES[0])).replace("__AY__", str(START_ANGLES[1]))


def info_markdown(conf: Conformer, seed: int) -> str:
    how = method(conf, seed)
    lines = [f"**{text(conf.smiles[:120])}**: {conf.num_heavy_atoms} heavy atoms, {how}."]
    lines += [f"⚠️ {text(w)}" for w in conf.warnings]
    return "\n\n".join(lines)
