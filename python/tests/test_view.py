"""Graph.view() and the notebook pictures (_repr_svg_, _repr_html_)."""
import json
import os
import re

import pytest

import nkigraph


def page_data(html):
    """The JSON the page embeds for its script."""
    m = re.search(r'<script type="application/json" id="nkiview-data">(.*?)'
                  r'</script>', html, re.S)
    assert m, "no embedded data"
    return json.loads(m.group(1))


def test_view_writes_the_page_of_the_cli(tmp_dir):
    g = nkigraph.trace("tiled_matmul", m=128, k=128, n=128)
    path = os.path.join(tmp_dir, "g.html")
    assert g.view(path) is None
    with open(path) as f:
        html = f.read()
    assert html.startswith("<!DOCTYPE html>")
    data = page_data(html)
    assert data["kernel"] == "tiled_matmul"
    assert len(data["instrs"]) == g.num_instructions
    assert data["schedule"]["target"] == "trn2"
    # Returned instead of written, with the timeline left out.
    data = page_data(g.view(profile=False))
    assert "absent" in data["schedule"]
    # A dump folder naming an instruction this graph does not have.
    dump = os.path.join(tmp_dir, "dump")
    os.makedirs(dump)
    open(os.path.join(dump, "000000_out_i999.npy"), "wb").close()
    with pytest.raises(nkigraph.InvalidArgumentError,
                       match="not from this graph"):
        g.view(path, dump=dump)


def test_small_graphs_show_as_svg_and_large_ones_as_the_page():
    small = nkigraph.trace("tiled_matmul", m=128, k=128, n=128)
    assert small.num_instructions <= 200
    svg = small._repr_svg_()
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg
    assert small._repr_html_() is None
    large = nkigraph.trace("transformer_tkg")
    assert large.num_instructions > 200
    assert large._repr_svg_() is None
    html = large._repr_html_()
    assert html.startswith("<iframe") and "srcdoc=" in html
    # The page inside, unescaped, is the view page of the graph.
    inner = html[html.index('srcdoc="') + 8:html.rindex('"')]
    inner = inner.replace("&quot;", '"').replace("&amp;", "&")
    assert len(page_data(inner)["instrs"]) == large.num_instructions
