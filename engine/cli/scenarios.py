"""`python -m engine scenarios list|save|load|rename|delete`: named scenarios saved in the store.

    scenarios list [--json]
    scenarios save FILE [--name NAME] [--author A] [--note TEXT] [--overwrite]
    scenarios load NAME [-o OUT.json]          (prints the scenario JSON without -o)
    scenarios rename OLD NEW
    scenarios delete NAME

FILE is a scenario JSON (or a report / list of scenarios: each is saved under its own name); it is
validated against the profile store before it is saved. A bad or taken name is refused with a message.
"""

from __future__ import annotations

import argparse
import getpass
import json
from pathlib import Path


def _store():
    from engine.store import Store

    return Store()


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in a bare container
        return ""


def cmd_list(args: argparse.Namespace) -> int:
    saved = _store().saved_scenarios.list()
    if args.json:
        # the owner hash is for the shelf's checks, not for reading
        print(json.dumps([{**s.model_dump(mode="json", exclude={"scenario", "owner"}),
                           "scenario": json.loads(s.scenario)}
                          for s in saved], indent=1))
        return 0
    if not saved:
        print("no saved scenarios")
        return 0
    width = max(len(s.name) for s in saved)
    for s in saved:
        sc = json.loads(s.scenario)
        what = f"{sc.get('model')} on {(sc.get('gpu') or {}).get('sku', 'no GPU')}"
        print(f"{s.name:<{width}}  {s.saved_at:%Y-%m-%d %H:%M}Z  {s.author or '-':<12} {what}"
              + (f"  # {s.note}" if s.note else ""))
    return 0


def cmd_save(args: argparse.Namespace) -> int:
    from engine.cli.report import read_report_input
    from engine.profiles import ProfileBook
    from engine.report import read_scenarios
    from engine.scenario import ScenarioError
    from engine.io.userfiles import shown

    store = _store()
    content = read_report_input(args.file, "scenario file")
    scenarios = read_scenarios(content, ProfileBook.from_store(store), source=shown(args.file))
    if args.name is not None and len(scenarios) > 1:
        raise ScenarioError(f"{args.file} holds {len(scenarios)} scenarios; --name applies to one")
    for sc in scenarios:
        row = store.saved_scenarios.save(sc, name=args.name, author=_user() if args.author is None else args.author,
                                         note=args.note, overwrite=args.overwrite)
        print(f"saved {row.name!r}")
    return 0


def cmd_load(args: argparse.Namespace) -> int:
    row = _store().saved_scenarios.get(args.name)
    if args.output:
        from engine.io.exporters import write_atomic

        write_atomic(Path(args.output), (row.scenario + "\n").encode())
        print(f"wrote {args.output}")
    else:
        print(row.scenario)
    return 0


def cmd_rename(args: argparse.Namespace) -> int:
    _store().saved_scenarios.rename(args.old, args.new)
    print(f"renamed {args.old!r} to {args.new!r}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    _store().saved_scenarios.delete(args.name)
    print(f"deleted {args.name!r}")
    return 0


def register(subparsers) -> None:
    sc = subparsers.add_parser("scenarios", help="named scenarios saved in the store")
    ssub = sc.add_subparsers(dest="action", required=True, parser_class=type(subparsers._parser_class()))
    ls = ssub.add_parser("list", help="list saved scenarios")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)
    sv = ssub.add_parser("save", help="save a scenario JSON file (validated) under a name")
    sv.add_argument("file", help="scenario JSON (or a report: each scenario under its own name); - for stdin")
    sv.add_argument("--name", help="name to save under (default: the scenario's own name)")
    sv.add_argument("--author", help="default: the login name")
    sv.add_argument("--note", default="")
    sv.add_argument("--overwrite", action="store_true", help="replace a saved scenario of the same name")
    sv.set_defaults(func=cmd_save)
    ld = ssub.add_parser("load", help="print (or write) a saved scenario's JSON")
    ld.add_argument("name")
    ld.add_argument("-o", "--output", metavar="OUT.json")
    ld.set_defaults(func=cmd_load)
    rn = ssub.add_parser("rename", help="rename a saved scenario")
    rn.add_argument("old")
    rn.add_argument("new")
    rn.set_defaults(func=cmd_rename)
    dl = ssub.add_parser("delete", help="delete a saved scenario")
    dl.add_argument("name")
    dl.set_defaults(func=cmd_delete)
