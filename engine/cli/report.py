"""`python -m engine report SCENARIO.json [SCENARIO2.json ...] -o OUT.html [--csv DIR] [--pdf OUT.pdf]`.

Each SCENARIO may be a scenario JSON file, a JSON list of scenarios, or an earlier report (.html or
.json), whose scenarios are re-evaluated; `--saved NAME` adds a saved scenario from the store. The HTML
is always written; --csv DIR adds the tables as CSV and Parquet, scenarios.json, README.txt and, with a
Chromium, figures/*.png; --pdf prints the report with Chromium. Without Chromium the PNG/PDF are skipped
with a note on stderr saying why (the exit status stays 0: the report itself was written). --papers adds a
"Seed papers" section: the reproduction table as the engine computes it now (`python -m engine reproduce`) and its
chart, without the slow and the simulator's entries unless --papers-slow / --papers-simulate ask for them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def read_report_input(path: str, what: str = "report input") -> str:
    """The text of a scenario, scenario list or report file ('-': stdin), read by engine.io.userfiles, with its
    JSON (or an HTML report's embedded JSON) checked for nesting before anything parses it."""
    from engine.report.readback import REPORT_MAX_BYTES, embedded_payload
    from engine.io.userfiles import check_json_depth, read_text, shown

    text = read_text(path, what, max_bytes=REPORT_MAX_BYTES)
    embedded = embedded_payload(text) if text.lstrip().startswith("<") else None
    check_json_depth(text if embedded is None else embedded, f"{what} {shown(path)}")
    return text


def cmd_report(args: argparse.Namespace) -> int:
    from engine.analytic import Context
    from engine.report import build_report, export_report, scenario_dicts
    from engine.store import Store, seed_hash
    from engine.io.userfiles import shown

    if not args.scenarios and not args.saved:
        raise SystemExit("python -m engine report: error: give at least one SCENARIO file or --saved NAME")
    store = Store()
    ctx = Context.from_store(store)
    raw: list = []
    for path in args.scenarios:
        raw += scenario_dicts(read_report_input(path), source=shown(path))
    raw += [store.saved_scenarios.get(name).scenario for name in args.saved]
    papers = args.papers or args.papers_slow or args.papers_simulate
    report = build_report(raw, ctx, seed_hash=seed_hash(store.seed_dir), title=args.title,
                          user_rows=store.user_counts(), papers=papers, papers_slow=args.papers_slow,
                          papers_simulate=args.papers_simulate)
    result = export_report(report, html_path=Path(args.output), table_dir=Path(args.csv) if args.csv else None,
                           pdf_path=Path(args.pdf) if args.pdf else None, chromium=args.chromium)
    with_papers = f", {len(report.papers.rows)} seed-paper result(s)" if report.papers is not None else ""
    print(f"wrote {args.output}: {len(report.designs)} design(s){with_papers}, {len(result.written)} file(s) in all")
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    rep = subparsers.add_parser("report", help="an HTML report (and CSV/Parquet, JSON, PNG, PDF) of one or more designs")
    rep.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                     help="scenario JSON, list of scenarios, or an earlier report (.html/.json); - for stdin")
    rep.add_argument("--saved", action="append", default=[], metavar="NAME", help="add a saved scenario (repeatable)")
    rep.add_argument("-o", "--output", required=True, metavar="OUT.html", help="the HTML report to write")
    rep.add_argument("--csv", metavar="DIR", help="also write the tables (CSV and Parquet), scenarios.json and PNGs here")
    rep.add_argument("--pdf", metavar="OUT.pdf", help="also print the report to PDF (needs Chromium)")
    rep.add_argument("--title", default="Kneepoint design report")
    rep.add_argument("--chromium", metavar="PATH", help="Chromium to use (default: $KNEEPOINT_CHROMIUM, /usr/bin/chromium)")
    rep.add_argument("--papers", action="store_true",
                     help="add a 'Seed papers' section: the reproduction table as run now, and its chart")
    rep.add_argument("--papers-slow", action="store_true",
                     help="with --papers, also run the slow entries (up to a few minutes; implies --papers)")
    rep.add_argument("--papers-simulate", action="store_true",
                     help="with --papers, also run the simulator's entries (minutes; implies --papers)")
    rep.set_defaults(func=cmd_report)
