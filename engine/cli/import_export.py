"""`python -m engine import ...` and `python -m engine export ...`: register(subparsers) adds both.

    import perf-analyzer FILE --model M --gpu G --partition P --batch B [--precision fp16] [--framework triton]
    import model-analyzer FILE --gpu G --partition P [--model M] [--triton-model T] [--config C] ...
    import csv FILE [--table latency_points]        (the project's own schema, as exported)
    import parquet FILE [--table latency_points]
    export csv|parquet PATH [--table T] [--user-only]   (PATH: a directory for every table, a file for one)
    profiles clear-user [--table T] [--yes]         (registered under `profiles` by engine.cli.main)

Every import takes --max-rows N: the most user rows a table may hold afterwards (default
engine.store.MAX_USER_ROWS); more is refused with a message naming the limit, and nothing is added.

Each handler prints what it added or wrote (rows per table) and returns 0; an import that fails
prints its one-line reason (file, line, field) on stderr, adds nothing, and returns 2. An import that
names a model the catalogue does not know still imports it, and says so on stderr ("warning: ...",
with the closest known names).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.cli.vocab import EXPORT_FORMATS, PRECISIONS, TABLE_NAMES, USER_TABLES

__all__ = ["register", "register_clear_user", "cmd_import_perf_analyzer", "cmd_import_model_analyzer", "cmd_import_own",
           "cmd_export", "cmd_clear_user"]


def _store(store, args: argparse.Namespace = None):
    """The store to use (a fresh one unless given), with the row limit an import's --max-rows asked for."""
    if store is None:
        from engine.store import Store

        store = Store()
    if args is not None and getattr(args, "max_rows", None) is not None:
        store.max_user_rows = args.max_rows
    return store


def _positive_rows(text: str) -> int:
    try:
        rows = int(text)
    except ValueError:
        rows = 0
    if rows <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of rows above zero")
    return rows


def _report(run) -> int:
    from engine.io.importers import ImportFailed

    try:
        result = run()
    except ImportFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(result.summary())
    for note in result.notes:
        print(f"note: {note}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _triton_fields(args: argparse.Namespace) -> dict:
    return dict(gpu=args.gpu, partition=args.partition, precision=args.precision, framework=args.framework,
                source_ref=args.source, measured_on=args.measured_on)


def _regular(path) -> None:
    """A FIFO or device is refused before the importer opens it (it would block or never end), as is a file past
    the size limit of engine.io.userfiles."""
    from engine.io.userfiles import regular_file

    regular_file(path, "import file")


def cmd_import_perf_analyzer(args: argparse.Namespace, store=None) -> int:
    _regular(args.file)
    from engine.io.importers import import_perf_analyzer

    fields = _triton_fields(args) | dict(model=args.model, batch=args.batch)
    return _report(lambda: import_perf_analyzer(_store(store, args), args.file, **fields))


def cmd_import_model_analyzer(args: argparse.Namespace, store=None) -> int:
    _regular(args.file)
    from engine.io.importers import import_model_analyzer

    fields = _triton_fields(args) | dict(model=args.model, triton_model=args.triton_model, config=args.config)
    return _report(lambda: import_model_analyzer(_store(store, args), args.file, **fields))


def cmd_import_own(args: argparse.Namespace, store=None) -> int:
    from engine.io.importers import import_file

    _regular(args.file)
    return _report(lambda: import_file(_store(store, args), args.file, table=args.table, fmt=args.format))


def cmd_export(args: argparse.Namespace, store=None) -> int:
    from engine.io.exporters import export_all, export_table

    s = _store(store)
    path = Path(args.path)
    try:
        if args.table:
            if args.user_only and args.table not in USER_TABLES:
                raise ValueError(f"{args.table!r} has no user rows; tables with user rows: {', '.join(USER_TABLES)}")
            if path.is_dir():
                path = path / f"{args.table}.{args.format}"
            counts = {args.table: export_table(s, args.table, path, args.format, args.user_only)}
        else:
            counts = export_all(s, path, args.format, args.user_only)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(f'{n} {t}' for t, n in counts.items())} to {path}")
    return 0


def cmd_clear_user(args: argparse.Namespace, store=None) -> int:
    """Remove the user's own rows (imports, profiler output) of one table or all; the seed rows stay."""
    s = _store(store)
    tables = [args.table] if args.table else list(USER_TABLES)
    counts = s.user_counts()
    listing = ", ".join(f"{counts[t]:,} {t}" for t in tables)
    if not args.yes:
        print(f"would remove {listing} user rows (kept in {s.user_dir}); nothing removed: add --yes to remove "
              "them", file=sys.stderr)
        return 1
    removed = {t: s.clear_user_rows(t) for t in tables}
    print(f"removed {', '.join(f'{n:,} {t}' for t, n in removed.items())} user rows; the seed rows are unchanged")
    return 0


def register_clear_user(profiles_subparsers) -> None:
    """Add `clear-user` to the `profiles` command's subparsers (engine.cli.main builds that group)."""
    cu = profiles_subparsers.add_parser("clear-user", help="remove your own rows (imports, profiler output); "
                                        "the seed rows stay")
    cu.add_argument("--table", choices=USER_TABLES, help="only this table (default: every table with user rows)")
    cu.add_argument("--yes", action="store_true", help="really remove them (without it: say what would go)")
    cu.set_defaults(func=cmd_clear_user)


def _max_rows_arg(p: argparse.ArgumentParser) -> None:
    # the default is named, not imported: building the parser must not load DuckDB
    p.add_argument("--max-rows", type=_positive_rows, metavar="N",
                   help="most user rows the table may hold after the import (default: engine.store.MAX_USER_ROWS; "
                        "a refusal names it)")


def _common_triton(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, help="the CSV file")
    p.add_argument("--gpu", required=True, help="catalogue GPU SKU it ran on (e.g. A100-SXM4-40GB), or CPU")
    p.add_argument("--partition", required=True, help="full, a MIG profile of that GPU (1g.5gb), or mps:N (1..100)")
    p.add_argument("--precision", default="fp16", choices=PRECISIONS, help="default: fp16")
    p.add_argument("--framework", default="triton", help="backend label kept with the rows (default: triton)")
    p.add_argument("--source", help="short provenance kept on every row (default: tool and file name)")
    p.add_argument("--measured-on", default="", help="date and host of the measurement")
    _max_rows_arg(p)


def register(subparsers) -> None:
    """Add the `import` and `export` commands to an argparse subparsers object."""
    imp = subparsers.add_parser("import", help="import measurements into the store (all or nothing)")
    isub = imp.add_subparsers(dest="import_kind", required=True, parser_class=type(imp), metavar="KIND")

    pa = isub.add_parser("perf-analyzer", help="Triton perf_analyzer -f CSV (microseconds), one batch size")
    _common_triton(pa)
    pa.add_argument("--model", required=True, help="project model name (e.g. resnet50)")
    pa.add_argument("--batch", required=True, type=int, help="client batch size (perf_analyzer -b)")
    pa.set_defaults(func=cmd_import_perf_analyzer)

    ma = isub.add_parser("model-analyzer", help="Triton Model Analyzer metrics-model-inference.csv (ms)")
    _common_triton(ma)
    ma.add_argument("--model", help="project model name (default: the file's Model column)")
    ma.add_argument("--triton-model", help="keep only rows whose Model column is this")
    ma.add_argument("--config", help="keep only rows of this Model Config Path (e.g. resnet50_config_2)")
    ma.set_defaults(func=cmd_import_model_analyzer)

    for fmt in EXPORT_FORMATS:
        own = isub.add_parser(fmt, help=f"the project's own {fmt} schema (as written by export {fmt})")
        own.add_argument("file", type=Path)
        own.add_argument("--table", choices=USER_TABLES,
                         help="target table (default: the file's name if it is a table, else latency_points)")
        _max_rows_arg(own)
        own.set_defaults(func=cmd_import_own, format=fmt)

    exp = subparsers.add_parser("export", help="write tables to CSV or Parquet in the project's own schema")
    exp.add_argument("format", choices=EXPORT_FORMATS)
    exp.add_argument("path", type=Path, help="a directory (every table, <table>.<format>) or, with --table, a file")
    exp.add_argument("--table", choices=TABLE_NAMES, help="export only this table, to the file PATH")
    exp.add_argument("--user-only", action="store_true", help="only the user's rows (imports, profiler output)")
    exp.set_defaults(func=cmd_export)


def main(argv=None) -> int:
    """Stand-alone entry (`python -m engine.cli.import_export import ...`) until engine.cli.main calls register()."""
    from engine.cli.main import _Parser
    from engine.io.importers import ImportFailed
    from engine.store import StoreError

    parser = _Parser(prog="python -m engine")
    register(parser.add_subparsers(dest="command", required=True, parser_class=_Parser))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ImportFailed, StoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
