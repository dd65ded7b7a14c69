"""Command line: argument parsing and wiring, nothing else.

Exit codes (a contract CI relies on): 0 nothing reached the fail level; 1 something did (or a
conversion failed); 2 usage error or a path that does not exist.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from shardshift.report import printable

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
SCHEMA_NAMES = ("deepspeed", "accelerate", "plan")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _version(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.split("."))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a version like 0.19.8") from None


def build_parser() -> argparse.ArgumentParser:
    from shardshift import __version__, report

    parser = argparse.ArgumentParser(prog="shardshift", description=(
        "Read, check and translate distributed training configs (DeepSpeed ds_config, FSDP2 code)."))
    parser.add_argument("--version", action="version", version=f"shardshift {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser("check", help="check configuration files for silent misconfigurations")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or directories (default: .)")
    check.add_argument("--format", choices=report.FORMATS, default="text",
                       help="output format (default: text; auto: github inside GitHub Actions, else text)")
    check.add_argument("--world-size", type=_positive, help="total number of processes (GPUs)")
    check.add_argument("--nodes", type=_positive, help="number of nodes (with --gpus-per-node)")
    check.add_argument("--gpus-per-node", type=_positive, help="GPUs per node (with --nodes)")
    check.add_argument("--deepspeed-version", type=_version, help="DeepSpeed version to judge against (default: the "
                       "repository's pin, else the newest)")
    for framework, label in (("megatron-core", "Megatron Core"), ("accelerate", "Accelerate"),
                             ("transformers", "Transformers"), ("axolotl", "Axolotl"), ("torchtitan", "torchtitan"),
                             ("torch", "PyTorch")):
        check.add_argument(f"--{framework}-version", type=_version, metavar="VERSION",
                           help=f"{label} release to judge against (default: the repository's pin, else the newest)")
    check.add_argument("--hidden-size", type=_positive, help="the model's hidden size, for bucket sizing")
    check.add_argument("--gpu-memory", metavar="SIZE", help="memory per GPU (80GB, 80GiB): with the model's size, "
                       "a setup that cannot fit is reported (PL201)")
    model = check.add_mutually_exclusive_group()
    model.add_argument("--model-params", metavar="N", help="the model's parameter count (8B, 70e9)")
    model.add_argument("--model-config", metavar="FILE", help="the model's Hugging Face config.json")
    check.add_argument("--env", action="append", metavar="NAME=VALUE",
                       help="a variable of the job's environment for launch scripts (repeatable): `$NAME` and "
                            "`${NAME:-default}` give VALUE")
    check.add_argument("--select", help="comma-separated rule codes or prefixes to run (default: all)")
    check.add_argument("--ignore", help="comma-separated rule codes or prefixes to skip")
    check.add_argument("--fail-on", choices=["error", "warning"], default=None,
                       help="lowest severity that makes the exit status 1 (default: error)")
    check.add_argument("--min-severity", choices=["error", "warning", "info"], default=None,
                       help="lowest severity shown (default: warning for text and github, which count the "
                            "hidden infos; every finding for json and sarif)")
    check.add_argument("--show-evidence", action="store_true",
                       help="in text output, list under each finding the premises it rests on (the program or "
                            "reader, the release, the file's role and other readers) and the file and line that "
                            "establish each (JSON and SARIF always carry them)")
    check.add_argument("--skip-unrecognised", action="store_true",
                       help="skip files named on the command line that are not configurations shardshift reads "
                            "(the pre-commit hooks pass every changed file); without it each is an error (SS005)")
    fixing = check.add_mutually_exclusive_group()
    fixing.add_argument("--fix", action="store_true", help="apply the safe fixes in place, then report what remains")
    fixing.add_argument("--diff", action="store_true",
                        help="print the safe fixes as a unified diff instead of writing them (exit 1 if there are any)")
    check.add_argument("--follow-outside", action="store_true", default=None,
                       help="read the files outside the checked tree that a checked file names (a launch script's "
                            "--deepspeed /elsewhere/ds.json); without it they are reported (SS006), not read")
    check.add_argument("--no-cache", action="store_true",
                       help="neither read nor write shardshift's cache of the repository's listing (where it lives: "
                            "SHARDSHIFT_CACHE_DIR, else $XDG_CACHE_HOME/shardshift or ~/.cache/shardshift)")
    check.add_argument("--fix-links", action="store_true",
                       help="with --fix: write a symbolic link's target and a hard-linked file in place (both only "
                            "inside the checked tree); without it such files are reported, not written")
    configuration = check.add_mutually_exclusive_group()
    configuration.add_argument("--config", metavar="FILE",
                               help="read options from this shardshift.toml or pyproject.toml (default: found by "
                                    "walking up from the current directory)")
    configuration.add_argument("--isolated", action="store_true", help="ignore every configuration file")

    convert = commands.add_parser("convert", help="translate a config into another format, with a migration report")
    convert.add_argument("source", metavar="SRC")
    convert.add_argument("--to", required=True, dest="target",
                         help="target format: deepspeed, fsdp2, accelerate, accelerate-fsdp2, axolotl, megatron (a "
                              "launch script), megatron-args (an argument list), torchtitan or plan")
    convert.add_argument("--env", action="append", metavar="NAME=VALUE",
                         help="a variable of the job's environment for a launch script (repeatable)")
    convert.add_argument("-o", "--output", help="write the result here (default: stdout)")
    convert.add_argument("--report", help="also write the migration report as JSON to this file")
    convert.add_argument("--strict", action="store_true",
                         help="exit 1 when the report drops any setting (the output is still written)")

    migrate = commands.add_parser("migrate", help="move a whole setup (launch script and configs) to another "
                                                  "framework, as a patch with a report")
    migrate.add_argument("source", metavar="SETUP", help="a launch script, or a folder of them (fsdp2 and "
                                                          "torchtitan: also a ds_config alone)")
    migrate.add_argument("--to", required=True, dest="target", help="target: trainer-fsdp2 (the Hugging Face "
                                                                      "Trainer's own FSDP2), accelerate-fsdp2 (the "
                                                                      "Trainer under accelerate launch with an FSDP2 "
                                                                      "config), fsdp2 (a DeepSpeed script's own loop: "
                                                                      "the FSDP2 module under torchrun) or torchtitan "
                                                                      "(torchtitan's trainer with a TOML)")
    migrate.add_argument("--env", action="append", metavar="NAME=VALUE",
                         help="a variable of the job's environment for the launch script (repeatable)")
    migrate.add_argument("--transformers-version", metavar="X.Y.Z",
                         help="the transformers release the migrated run will use, when the repository pins an "
                              "older one (the Trainer's FSDP2 needs 5.0 or later)")
    migrate.add_argument("--apply", action="store_true", help="write the changes (default: print them as a "
                                                               "unified diff)")
    migrate.add_argument("--report", help="also write the report as JSON to this file")

    schema = commands.add_parser("schema", help="print a JSON Schema for editors (deepspeed, accelerate, plan)")
    schema.add_argument("name", choices=SCHEMA_NAMES, metavar="NAME", help=", ".join(SCHEMA_NAMES))

    from shardshift.planner import cli as planner_cli

    planner_cli.add_parsers(commands)

    rules = commands.add_parser("rules", help="list the rules")
    rules.add_argument("--coverage", action="store_true",
                       help="how many of each framework's own configuration checks a rule mirrors, and why the rest cannot")
    explain = commands.add_parser("explain", help="show one rule's documentation")
    explain.add_argument("code")
    lsp = commands.add_parser("lsp", help="run the language server over stdio (for editors; needs the lsp extra)")
    lsp.add_argument("--stdio", action="store_true", help="accepted for clients that pass it (stdio is the only transport)")
    return parser


def main(argv: list[str] | None = None) -> int:
    # A config may hold a lone surrogate (a "\\ud800" escape): print it escaped, never crash on it.
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    # The readers build many short-lived objects over trees kept for the whole run (syntax trees,
    # analyses), and the collector's default passes over that heap cost a quarter of `check .` in a
    # large repository (bench/RESULTS.md). Fewer young-generation passes keep the same memory.
    # Set here, for shardshift's own process; the API leaves the caller's collector alone.
    import gc

    gc.set_threshold(10_000, 10, 10)
    handler = {"check": _check, "convert": _convert, "migrate": _migrate, "rules": _rules, "explain": _explain,
               "schema": _schema, "plan": _plan, "diff": _diff, "lsp": _lsp}[args.command]
    try:
        return handler(args, parser)
    except BrokenPipeError:  # `shardshift check | head`
        return EXIT_OK


def _check(args, parser) -> int:
    from shardshift.context import cache, tree

    cache.ENABLED[0] = not args.no_cache
    tree.prefetch(args.paths)  # git lists a large repository while the files are read and checked
    from shardshift import api
    from shardshift.report import REPORTERS, resolve
    from shardshift.rules.base import SEVERITY_RANK

    reporter_name = resolve(args.format)
    try:
        options = api.resolve_options(
            world_size=args.world_size, nodes=args.nodes, gpus_per_node=args.gpus_per_node,
            deepspeed_version=args.deepspeed_version, hidden_size=args.hidden_size, select=args.select,
            ignore=args.ignore, fail_on=args.fail_on, min_severity=args.min_severity, config=args.config,
            isolated=args.isolated, gpu_memory=args.gpu_memory, model_params=args.model_params,
            model_config=args.model_config, skip_unrecognised=args.skip_unrecognised,
            follow_outside=args.follow_outside,
            megatron_core_version=args.megatron_core_version, accelerate_version=args.accelerate_version,
            transformers_version=args.transformers_version, axolotl_version=args.axolotl_version,
            torchtitan_version=args.torchtitan_version, torch_version=args.torch_version, env=args.env)
        result = api.run(args.paths, options)
    except api.ShardshiftError as error:
        if not error.in_configuration:
            parser.error(error.message)
        print(f"shardshift: {printable(error.message)}", file=sys.stderr)
        return EXIT_USAGE
    unwritten = False
    if args.fix or args.diff:
        from shardshift.context.environment import given

        with given(options.env):
            changed, unwritten = _apply_fixes(result, options, write=args.fix, roots=args.paths,
                                              follow_links=args.fix_links)
        if args.diff:
            return EXIT_FINDINGS if changed else EXIT_OK
    # Text and GitHub annotations are read by people: infos are counted, not shown, unless asked.
    # JSON and SARIF are read by programs: every finding, unless asked.
    min_severity = options.min_severity or ("warning" if reporter_name in ("text", "github") else None)
    api.present(result, min_severity)
    reporter = importlib.import_module(REPORTERS[reporter_name])
    if reporter_name == "text" and args.show_evidence:
        sys.stdout.write(reporter.render(result, show_evidence=True))
    else:
        sys.stdout.write(reporter.render(result))
    return EXIT_FINDINGS if unwritten or result.worst() >= SEVERITY_RANK[options.fail_on] else EXIT_OK


def _apply_fixes(result, options, *, write: bool, roots: list[str], follow_links: bool = False) -> tuple[int, bool]:
    """--fix: write the fixed files and leave in `result` what remains and what was fixed.
    --diff: print the diff of every file that would change. Returns the number of files changed
    and whether some file could not be written."""
    from shardshift import fix
    from shardshift.check import check_documents

    context = options.context
    outcome = fix.fix_documents(result.documents, context, lambda documents: check_documents(
        documents, context, options.select, options.ignore, options.per_file_ignores))
    unwritten = False
    written: dict[str, str] = {}
    for path, (before, after) in outcome.changed.items():
        if not write:
            sys.stdout.write(fix.unified_diff(path, before, after))
            continue
        real = os.path.realpath(path)
        if written.get(real) == after:  # the same file reached twice (a link and its target)
            continue
        why = fix.write(path, after, before, roots, follow_links=follow_links)
        if why is None:
            written[real] = after
        if why is not None:
            print(f"shardshift: {printable(path)}: not fixed: {why}", file=sys.stderr)
            unwritten = True
    if not write:
        noun = "finding" if len(outcome.fixed) == 1 else "findings"
        print(f"shardshift: {len(outcome.fixed)} {noun} fixable in {len(outcome.changed)} file(s); "
              "run with --fix to apply", file=sys.stderr)
    if unwritten:  # report the run as it is on disk
        return len(outcome.changed), True
    result.findings, result.documents, result.fixed = outcome.findings, outcome.documents, outcome.fixed
    return len(outcome.changed), False


def _convert(args, parser) -> int:
    from shardshift import api

    if args.output and os.path.exists(args.output) and os.path.isfile(args.source) \
            and os.path.samefile(args.output, args.source):
        parser.error("refusing to write over the source file; choose another --output")
    try:
        migration = api.convert(args.source, to=args.target, env=args.env)
    except api.ShardshiftError as error:
        if error.usage:
            parser.error(error.message)
        print(f"shardshift: {printable(error.message)}", file=sys.stderr)
        return EXIT_FINDINGS
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(migration.text)
        except OSError as error:
            print(f"shardshift: cannot write {args.output}: {error.strerror}", file=sys.stderr)
            return EXIT_USAGE
    else:
        sys.stdout.write(migration.text)
    for entry in migration.entries:
        target = f" -> {entry.target}" if entry.target else ""
        where = entry.file or api.display_path(args.source)
        print(f"{where}:{entry.line}:{entry.column}: {entry.status:<11} {entry.source}{target}: {entry.reason}",
              file=sys.stderr)
    counts = migration.summary
    print(f"{counts['exact']} exact, {counts['approximate']} approximate, {counts['dropped']} dropped, "
          f"{counts['unknown']} unknown", file=sys.stderr)
    if args.report:
        try:
            with open(args.report, "w", encoding="utf-8") as handle:
                json.dump(migration.to_json(), handle, indent=2)
                handle.write("\n")
        except OSError as error:
            print(f"shardshift: cannot write {args.report}: {error.strerror}", file=sys.stderr)
            return EXIT_USAGE
    if args.strict and (counts["dropped"] or counts["unknown"]):
        print(f"shardshift: --strict: {counts['dropped']} setting(s) dropped, {counts['unknown']} unknown",
              file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_OK


def _migrate(args, parser) -> int:
    from shardshift import api, setup_migration

    try:
        migrations = setup_migration.migrate(args.source, args.target, env=args.env,
                                             transformers_version=args.transformers_version)
        written = [setup_migration.apply(m) for m in migrations] if args.apply else []
    except api.ShardshiftError as error:
        if error.usage:
            parser.error(error.message)
        print(f"shardshift: {printable(error.message)}", file=sys.stderr)
        return EXIT_FINDINGS
    except OSError as error:
        print(f"shardshift: cannot write {error.filename}: {error.strerror}", file=sys.stderr)
        return EXIT_USAGE
    for migration in migrations:
        if not args.apply:
            sys.stdout.write(migration.diff())
            sys.stdout.flush()  # the patch before the report, on a terminal that shows both
            root = "." if os.path.abspath(migration.root) == os.getcwd() else api.display_path(migration.root)
            print(f"the patch's paths are relative to {root} (`git apply` there, or run again with --apply)",
                  file=sys.stderr)
        for entry in migration.entries:
            target = f" -> {entry.target}" if entry.target else ""
            where = api.display_path(entry.file or migration.source)
            print(f"{where}:{entry.line}:{entry.column}: {entry.status:<11} {entry.source}{target}: {entry.reason}",
                  file=sys.stderr)
        counts = migration.summary
        print(f"{api.display_path(migration.source)}: {counts['exact']} exact, {counts['approximate']} approximate, "
              f"{counts['dropped']} dropped, {counts['unknown']} unknown", file=sys.stderr)
    for paths in written:
        print("written: " + ", ".join(api.display_path(p) for p in paths), file=sys.stderr)
    if args.report:
        try:
            with open(args.report, "w", encoding="utf-8") as handle:
                json.dump([m.to_json() for m in migrations], handle, indent=2)
                handle.write("\n")
        except OSError as error:
            print(f"shardshift: cannot write {args.report}: {error.strerror}", file=sys.stderr)
            return EXIT_USAGE
    return EXIT_OK


def _plan(args, parser) -> int:
    from shardshift.planner import cli as planner_cli

    return planner_cli.run_plan(args, parser)


def _diff(args, parser) -> int:
    from shardshift.planner import cli as planner_cli

    return planner_cli.run_diff(args, parser)


def _schema(args, parser) -> int:
    from shardshift.schemas import schema

    sys.stdout.write(json.dumps(schema(args.name), indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


def _lsp(args, parser) -> int:
    import importlib.util

    if importlib.util.find_spec("pygls") is None or importlib.util.find_spec("lsprotocol") is None:
        print("shardshift: the language server needs the lsp extra: pip install 'shardshift[lsp]'", file=sys.stderr)
        return EXIT_USAGE
    from shardshift.lsp import server

    return server.main()


def _rules(args, parser) -> int:
    if args.coverage:
        from shardshift import coverage

        print(coverage.render(coverage.summary()))
        return EXIT_OK
    from shardshift.rules import all_rules

    for rule in all_rules():
        formats = ",".join(rule.formats) or "all"
        print(f"{rule.code}  {rule.name:<32} {rule.severity:<8} {formats:<10} {rule.summary()}")
    return EXIT_OK


def _explain(args, parser) -> int:
    from shardshift.rules import rule_by_code

    rule = rule_by_code(args.code)
    if rule is None:
        print(f"shardshift: unknown rule {args.code!r} (see `shardshift rules`)", file=sys.stderr)
        return EXIT_USAGE
    from shardshift.config import ConfigError
    from shardshift.docs_url import rule_url

    try:
        url = rule_url(rule.code)  # the project's docs-url, else the package's, else the default
    except ConfigError as error:
        print(f"shardshift: {printable(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{rule.code} ({rule.name}), default severity {rule.severity}\n")
    print(rule.documentation())
    print(f"\nDocumentation: {url}")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
