"""data/seed/paper_results.csv: the seed papers' headline results, checked for shape (issue 14)."""

import collections

import pytest

from engine.seed.papers import (COLUMNS, PAPERS, PaperResultsError, figures_of, paper_results,
                                     read_paper_results)


def test_every_row_validates_with_unique_ids_and_known_papers():
    rows = read_paper_results()
    assert len({r.id for r in rows}) == len(rows) >= 40
    per_paper = collections.Counter(r.paper for r in rows)
    assert set(per_paper) == set(PAPERS) and min(per_paper.values()) >= 6
    assert all(r.quote and r.where and r.unit for r in rows)


def test_a_duplicate_id_or_unknown_paper_is_refused(tmp_path):
    good = "x,preba,Sec 1,q,1,x,quote,\n"
    dup = tmp_path / "dup.csv"
    dup.write_text(",".join(COLUMNS) + "\n" + good + good)
    with pytest.raises(PaperResultsError, match="twice"):
        read_paper_results(dup)
    bad = tmp_path / "bad.csv"
    bad.write_text(",".join(COLUMNS) + "\n" + good.replace("preba", "nope"))
    with pytest.raises(PaperResultsError, match="valid: preba"):
        read_paper_results(bad)
    cols = tmp_path / "cols.csv"
    cols.write_text("id,paper\nx,preba\n")
    with pytest.raises(PaperResultsError, match="columns"):
        read_paper_results(cols)


def test_figures_name_the_figure_or_else_the_section():
    assert figures_of("Sec 6.2, Fig 8") == {"fig 8"}
    assert figures_of("Sec V-A, Fig 6a") == figures_of("Figure 6") == {"fig 6"}
    assert figures_of("Sec VI-B, Table IV") == {"table iv"}
    assert figures_of("Sec 1") == {"sec 1"}
    assert paper_results()["splitrpc-pnic-avg"].figures == {"fig 8"}
