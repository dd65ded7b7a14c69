"""Compiles `grammars/launch.lark` into `shardshift/_parsers/launch.py`: the LALR(1) tables and a
small driver that runs them, so reading a launch script imports neither lark nor lark's
stand-alone runtime (which costs tens of milliseconds to import and to build).

    python -m shardshift.formats.megatron.shell_grammar          # rewrite the module
    python -m shardshift.formats.megatron.shell_grammar --check   # exit 1 when it is stale

lark (a development dependency) builds the tables; the states are renumbered breadth-first from
the start state and the rules sorted, so the output depends only on the grammar and a test can
compare it with the file. The driver builds the same tree lark would: a rule whose name starts
with `_` is spliced into its parent, a `?rule` with one child is that child, and a leaf is the
token exactly as the tokenizer gave it (a `(type, value, position)` tuple).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
GRAMMAR = ROOT / "grammars" / "launch.lark"
OUTPUT = ROOT / "src" / "shardshift" / "_parsers" / "launch.py"

_DRIVER = '''

class Tree:
    """An inner node: the rule's name and its children (trees and token tuples)."""

    __slots__ = ("data", "children")

    def __init__(self, data, children):
        self.data, self.children = data, children

    def __repr__(self):
        return f"Tree({self.data!r}, {self.children!r})"


def parse(tokens):
    """(tree, None) for a token list the grammar accepts; (None, k) when tokens[k] is the first one
    it cannot take (k == len(tokens): the input ends too early)."""
    kinds = [token[0] for token in tokens]
    kinds.append("$END")
    actions, rules, n = ACTIONS, RULES, len(tokens)
    states, values = [START], []
    row, k = actions[START], 0
    while True:
        action = row.get(kinds[k])
        if action is None:
            return None, k
        if action >= 0:
            states.append(action)
            values.append(tokens[k])
            k += 1
            row = actions[action]
            continue
        name, size, mode = rules[~action]
        if size == 1:  # the common case, in place: `_item: WORD`, `?command: simple`, ...
            child = values[-1]
            if mode == 2:
                value = child if type(child) is not list else child[0] if len(child) == 1 else Tree(name, child)
            elif mode == 1:
                value = child if type(child) is list else [child]
            else:
                value = Tree(name, child if type(child) is list else [child])
            states.pop()
            state = actions[states[-1]][name]
            states.append(state)
            values[-1] = value
            if k >= n and state == END:
                return value, None
            row = actions[state]
            continue
        if size:
            taken = values[-size:]
            del values[-size:]
            del states[-size:]
            first = taken[0]
            if type(first) is list:  # a list spliced in: grow it (it belongs to this parse)
                children = first
                taken = taken[1:]
            else:
                children = []
            for child in taken:
                if type(child) is list:
                    children.extend(child)
                else:
                    children.append(child)
        else:
            children = []
        if mode == 1:
            value = children
        elif mode == 2 and len(children) == 1:
            value = children[0]
        else:
            value = Tree(name, children)
        state = actions[states[-1]][name]
        states.append(state)
        values.append(value)
        if k >= n and state == END:
            return value, None
        row = actions[state]
'''


def generate() -> str:
    import lark
    from lark.parsers.lalr_analysis import Shift

    parser = lark.Lark(GRAMMAR.read_text(), parser="lalr")
    table = parser.parser.parser.parser.parse_table
    start = table.start_states["start"]
    for rule in parser.rules:
        for symbol in rule.expansion:
            assert not getattr(symbol, "filter_out", False), f"{symbol} would be filtered: not supported"
        assert rule.alias is None and not rule.options.keep_all_tokens, rule
    rules = sorted(parser.rules, key=lambda r: (str(r.origin.name), [str(s.name) for s in r.expansion]))
    rule_index = {id(r): i for i, r in enumerate(rules)}
    order, seen = [start], {start: 0}
    for state in order:  # breadth-first renumbering: the same grammar gives the same text
        for symbol in sorted(table.states[state], key=str):
            action, arg = table.states[state][symbol]
            if action is Shift and arg not in seen:
                seen[arg] = len(order)
                order.append(arg)
    lines = []
    for state in order:
        row = {}
        for symbol in sorted(table.states[state], key=str):
            action, arg = table.states[state][symbol]
            row[str(symbol)] = seen[arg] if action is Shift else ~rule_index[id(arg)]
        lines.append("    {" + ", ".join(f"{s!r}: {a}" for s, a in row.items()) + "},")
    rule_lines = []
    for rule in rules:
        name = str(rule.origin.name)
        mode = 1 if name.startswith("_") else 2 if rule.options.expand1 else 0
        shown = " ".join(str(s.name) for s in rule.expansion)
        rule_lines.append(f"    ({name!r}, {len(rule.expansion)}, {mode}),  # {name}: {shown}")
    header = (
        "# Generated from grammars/launch.lark by `python -m shardshift.formats.megatron.shell_grammar`;\n"
        "# do not edit (tests/test_megatron_shell.py checks that it is current).\n"
        '"""LALR(1) tables for the launch-script grammar and the driver that runs them (see\n'
        'shardshift/formats/megatron/shell_grammar.py)."""\n\n'
        f"START, END = 0, {seen[table.end_states['start']]}\n\n# (rule name, length, mode): mode 1 splices the children into the parent, 2 is a ?rule\n"
        "RULES = (\n" + "\n".join(rule_lines) + "\n)\n\n"
        "# per state: {symbol: action}; action >= 0 shifts to that state, ~action reduces RULES[~action]\n"
        "ACTIONS = (\n" + "\n".join(lines) + "\n)\n"
    )
    return header + _DRIVER


def main(argv: list[str]) -> int:
    text = generate()
    if "--check" in argv:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is stale: run python -m shardshift.formats.megatron.shell_grammar", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
