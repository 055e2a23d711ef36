"""The Papers page (issue 14): one seed paper's headline results beside the engine's, with the summary."""

from tests.pagetest import open_page


def test_papers_page_shows_the_chosen_papers_results():
    at = open_page("papers.py")
    at.selectbox(key="pap_paper").set_value("eif").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    tenants = table[table["id"] == "eif-tenants"].iloc[0]
    # a column with gaps (not-modelled rows) is shown as its formatted text (ui.tables)
    assert float(tenants["paper"]) == 48 and float(tenants["Kneepoint"]) == 48 and tenants["sample"] == "in-sample"
    assert (table[table["id"].str.startswith("eif-speedup")]["status"] == "not modelled").all()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["results"] == str(len(table)) and metrics["not modelled"] == "4"
    assert "entries:" in at.caption[-1].value


def test_papers_page_leaves_slow_entries_out_until_asked():
    at = open_page("papers.py")
    at.selectbox(key="pap_paper").set_value("paris-elsa").run()
    table = at.dataframe[0].value
    assert "slow, not run" in set(table["status"]) and "needs --simulate" in set(table["status"])
    assert float(table[table["id"] == "paris-fig8-small-share"].iloc[0]["Kneepoint"]) == 40
