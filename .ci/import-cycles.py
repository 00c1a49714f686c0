#!/usr/bin/env python3
"""Checks that the modules of a Rust crate (or of one subtree of it) import each other without cycles.

What it checks (STYLE.md §1, "Layers in one direction inside src/"):
  * A module is one file: `src/cache.rs` is `cache`, `src/cache/shared.rs` is `cache/shared`, the crate root
    (`lib.rs`, `main.rs`) is `lib` / `main`. Inline `mod x { .. }` blocks belong to the file that holds them
    (they only change what `super::` and `self::` mean).
  * An import is any path reference from one module to another: `use crate::a::b`, grouped uses
    (`use crate::{a, b::{c, self}}`, `use super::*`), fully qualified paths in code (`crate::a::f()`,
    `super::x::T`), and relative paths through a child module declared in the file (`use shared::Change`
    in `cache.rs`). A child referring to its parent counts; a parent's `mod child;` declaration does not.
    A path names the deepest module file it reaches (`crate::cache::shared::Change` is `cache/shared`);
    a name that is not a module file stays with the module before it (`crate::AppState` is `lib`).
  * Not counted: test-only code. Items under `#[cfg(test)]` (the `mod tests { .. }` blocks, `mod tests;` files
    and everything they declare, single test-only `use`s or functions) and files starting with
    `#![cfg(test)]` are skipped: tests may reach across layers, the shipped code may not. Comments (doc
    comments and their intra-doc links included), string and char literals, `$crate` in macros and
    `pub(in path)` visibilities are not imports either. A module referring to itself is not a cycle.
  * The graph is restricted to the modules under the given subtree (all of the crate when none is given);
    when it has a cycle, the script names one cycle per strongly connected component, its modules in order,
    with the file and line of each import in it, and exits 1.

Dependency-free: python3 (3.8 or newer) only. Usage, from the repository root:
  python3 .ci/import-cycles.py src/lib.rs src/main.rs webhooks/src/lib.rs:json
Each argument is a crate root file, optionally `:subtree` (a module path, `/`-separated, e.g. `json` or
`server`) to check only that subtree's modules. `--graph` also prints every module's imports.
"""

import os
import re
import sys

RAW_STRING = re.compile(r'b?r(#*)"')


# ---------------------------------------------------------------------------------------------------------
# Lexing: strip comments and literals, then split into identifiers and punctuation, keeping line numbers.


def lex(text):
    """Returns [(token, line)]: identifiers, `::`, `#`, `!`, brackets and other single characters."""
    tokens = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == "\n":
                        line += 1
                    i += 1
        elif (m := RAW_STRING.match(text, i)) and (i == 0 or not _ident_char(text[i - 1])):
            end = '"' + m.group(1)
            j = text.find(end, m.end())
            j = n if j < 0 else j + len(end)
            line += text.count("\n", i, j)
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not _ident_char(text[i - 1]))):
            i += 1 if c == '"' else 2
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 1
                if i < n and text[i] == "\n":
                    line += 1
                i += 1
            i += 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}', '{') or a lifetime ('a, 'static).
            if i + 1 < n and text[i + 1] == "\\":
                j = i + 2
                while j < n and text[j] != "'":
                    j += 1
                i = j + 1
            elif i + 2 < n and text[i + 2] == "'":
                i += 3
            else:
                i += 1
                while i < n and _ident_char(text[i]):
                    i += 1
        elif c == "$" and text.startswith("$crate", i):
            i += len("$crate")
        elif _ident_char(c):
            j = i
            while j < n and _ident_char(text[j]):
                j += 1
            word = text[i:j]
            if word.startswith("r#"):
                word = word[2:]
            tokens.append((word, line))
            i = j
        elif text.startswith("::", i):
            tokens.append(("::", line))
            i += 2
        else:
            tokens.append((c, line))
            i += 1
    return tokens


def _ident_char(c):
    return c.isalnum() or c == "_"


# ---------------------------------------------------------------------------------------------------------
# Test-only code and visibilities.


def drop_test_items(tokens):
    """Removes items under `#[cfg(test)]`. Returns (tokens, whole_file_is_test)."""
    out = []
    i, n = 0, len(tokens)
    # `#![cfg(test)]` anywhere at the top (inner attributes come first).
    j = 0
    while j + 1 < n and tokens[j][0] == "#" and tokens[j + 1][0] == "!":
        end = _attr_end(tokens, j + 2)
        if _is_cfg_test(tokens[j + 2 : end]):
            return [], True
        j = end
    while i < n:
        if tokens[i][0] == "#" and i + 1 < n and tokens[i + 1][0] == "[":
            end = _attr_end(tokens, i + 1)
            if _is_cfg_test(tokens[i + 1 : end]):
                i = _item_end(tokens, end)
                continue
        out.append(tokens[i])
        i += 1
    return out, False


def _attr_end(tokens, i):
    """`tokens[i]` is `[`; returns the index after its matching `]`."""
    depth = 0
    while i < len(tokens):
        t = tokens[i][0]
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _is_cfg_test(attr):
    return [t for t, _ in attr] == ["[", "cfg", "(", "test", ")", "]"]


def _item_end(tokens, i):
    """Skips further attributes and the item that starts at `i`: up to its `;` or its closing `}`."""
    n = len(tokens)
    while i + 1 < n and tokens[i][0] == "#" and tokens[i + 1][0] == "[":
        i = _attr_end(tokens, i + 1)
    depth = 0
    while i < n:
        t = tokens[i][0]
        if t in "([":
            depth += 1
        elif t in ")]":
            depth -= 1
        elif t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif t == ";" and depth == 0:
            return i + 1
        i += 1
    return i


def drop_restricted_visibility(tokens):
    """Removes `pub(in path)`, `pub(crate)`, `pub(super)`, `pub(self)`: visibilities, not imports."""
    out = []
    i, n = 0, len(tokens)
    while i < n:
        if tokens[i][0] == "pub" and i + 1 < n and tokens[i + 1][0] == "(":
            j = i + 2
            if j < n and tokens[j][0] in ("in", "crate", "super", "self"):
                while j < n and tokens[j][0] != ")":
                    j += 1
                out.append(tokens[i])
                i = j + 1
                continue
        out.append(tokens[i])
        i += 1
    return out


# ---------------------------------------------------------------------------------------------------------
# Paths: `use` trees and qualified paths in code, resolved against the crate's module files.


def parse_use_tree(tokens, i, prefix, out):
    """Parses one use tree at `i` (after `use` or inside braces); appends (segments, line). Returns the end."""
    segs = list(prefix)
    n = len(tokens)
    if i < n and tokens[i][0] == "::":  # `use ::name::..`: an extern crate
        return _skip_to_use_end(tokens, i)
    line = tokens[i][1] if i < n else 0
    while i < n:
        t = tokens[i][0]
        if t == "{":
            i += 1
            while i < n and tokens[i][0] != "}":
                i = parse_use_tree(tokens, i, segs, out)
                if i < n and tokens[i][0] == ",":
                    i += 1
            return i + 1
        if t == "*":
            out.append((segs, line))
            return i + 1
        if not _is_ident(t):
            return i
        i += 1
        if i < n and tokens[i][0] == "::":
            segs = segs + [t]
            i += 1
            continue
        # The last segment: `self` in a group names the prefix itself.
        if not (t == "self" and segs):
            segs = segs + [t]
        if i < n and tokens[i][0] == "as":
            i += 2
        out.append((segs, line))
        return i
    return i


def _skip_to_use_end(tokens, i):
    depth = 0
    while i < len(tokens):
        t = tokens[i][0]
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
        elif t == ";" and depth <= 0:
            return i
        i += 1
    return i


def _is_ident(t):
    return bool(t) and (_ident_char(t[0]))


class Module:
    def __init__(self, name, path, scope):
        self.name = name  # `/`-separated, e.g. `cache/shared`, or `lib` / `main` for the root
        self.path = path  # file
        self.scope = scope  # module path from the crate root, e.g. ["cache", "shared"]
        self.tokens = []  # the file's tokens, test-only code removed


def discover(root_file):
    """Finds every non-test module file of the crate rooted at `root_file`. Returns {scope tuple: Module}."""
    root_name = os.path.splitext(os.path.basename(root_file))[0]
    modules = {}

    def visit(path, scope, dir_for_children):
        with open(path, encoding="utf-8") as f:
            tokens, is_test = drop_test_items(lex(f.read()))
        if is_test:
            return
        module = Module("/".join(scope) if scope else root_name, path, scope)
        module.tokens = tokens
        modules[tuple(scope)] = module
        # `mod name;` at any inline depth: a file module. (Inline `mod x { mod y; }` puts y under x/.)
        stack = []  # inline module names for each open `{`, or None
        pending_inline = None
        for k, (t, _) in enumerate(tokens):
            if t == "mod" and k + 2 < len(tokens) and _is_ident(tokens[k + 1][0]):
                name, after = tokens[k + 1][0], tokens[k + 2][0]
                inline = [s for s in stack if s is not None]
                if after == ";":
                    child_scope = scope + inline + [name]
                    child_dir = os.path.join(dir_for_children, *inline)
                    candidates = [os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name, "mod.rs")]
                    found = next((c for c in candidates if os.path.isfile(c)), None)
                    if found is None:
                        sys.exit(f"import-cycles: {path}: module `{name}` declared but no file among {candidates}")
                    sub_dir = os.path.join(child_dir, name)
                    visit(found, child_scope, sub_dir)
                elif after == "{":
                    pending_inline = name
            elif t == "{":
                stack.append(pending_inline)
                pending_inline = None
            elif t == "}":
                if stack:
                    stack.pop()
            elif t == ";":
                pending_inline = None

    root_dir = os.path.dirname(root_file)
    visit(root_file, [], root_dir)
    return modules


def references(module, modules):
    """Yields (target scope tuple, line, path text) for every path reference in `module`."""
    tokens = module.tokens
    n = len(tokens)
    # The inline-module scope at each token, for `super` / `self` and relative child paths.
    scopes = []
    stack, pending = [], None
    for k, (t, _) in enumerate(tokens):
        if t == "mod" and k + 2 < n and _is_ident(tokens[k + 1][0]) and tokens[k + 2][0] == "{":
            pending = tokens[k + 1][0]
        elif t == "{":
            stack.append(pending)
            pending = None
        elif t == "}" and stack:
            stack.pop()
        scopes.append(module.scope + [s for s in stack if s is not None])

    paths = []  # (segments, line, scope at the reference)
    k = 0
    while k < n:
        t, line = tokens[k]
        if t == "use" and (k == 0 or tokens[k - 1][0] != "::"):
            found = []
            at = scopes[k]
            k = parse_use_tree(tokens, k + 1, [], found)
            for segs, ln in found:
                paths.append((segs, ln, at))
            continue
        if _is_ident(t) and k + 1 < n and tokens[k + 1][0] == "::" and (k == 0 or tokens[k - 1][0] != "::"):
            segs = [t]
            j = k + 1
            while j + 1 < n and tokens[j][0] == "::" and _is_ident(tokens[j + 1][0]):
                segs.append(tokens[j + 1][0])
                j += 2
            paths.append((segs, line, scopes[k]))
            k = j
            continue
        k += 1

    for segs, line, scope in paths:
        target = resolve(segs, scope, module, modules)
        if target is not None:
            yield target, line, "::".join(segs)


def resolve(segs, scope, module, modules):
    """The deepest module file a path reaches, or None when it leaves the crate (std, other crates)."""
    if not segs:
        return None
    first = segs[0]
    if first == "crate":
        base, rest = [], segs[1:]
    elif first in ("super", "self"):
        base, rest = list(scope), list(segs)
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                if not base:
                    return None
                base.pop()
            rest.pop(0)
    else:
        # Relative to the current (inline) scope: only through a child module of this scope.
        base, rest = list(scope), list(segs)
        if tuple(base + [first]) not in modules:
            return None
    # Walk down through module files.
    current = base
    for seg in rest:
        if tuple(current + [seg]) in modules:
            current = current + [seg]
        else:
            break
    # The file holding `current` (an inline scope belongs to its file).
    while tuple(current) not in modules:
        current = current[:-1]
    return tuple(current)


# ---------------------------------------------------------------------------------------------------------
# Cycles.


def strongly_connected(nodes, edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            connect(v)
    return out


def shortest_cycle(start, component, edges):
    """A shortest cycle through `start` inside `component`, as a list of modules starting at `start`."""
    from collections import deque

    members = set(component)
    prev = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(edges.get(v, ())):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path))
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def check(spec, show_graph=False):
    root_file, _, subtree = spec.partition(":")
    modules = discover(root_file)
    prefix = tuple(subtree.split("/")) if subtree else ()
    if prefix and prefix not in modules:
        sys.exit(f"import-cycles: {root_file}: no module `{subtree}`")

    def name(scope):
        return modules[scope].name

    edges, where = {}, {}
    nodes = [s for s in modules if s[: len(prefix)] == prefix]
    for scope in nodes:
        for target, line, text in references(modules[scope], modules):
            if target == scope or target[: len(prefix)] != prefix:
                continue
            edges.setdefault(scope, set()).add(target)
            where.setdefault((scope, target), (modules[scope].path, line, text))

    if show_graph:
        for scope in sorted(nodes):
            targets = ", ".join(sorted(name(t) for t in edges.get(scope, ())))
            print(f"{name(scope)} -> {targets}")
    label = f"{root_file}" + (f" (modules under {subtree})" if subtree else "")
    cycles = [c for c in strongly_connected(nodes, edges) if len(c) > 1]
    n_edges = sum(len(v) for v in edges.values())
    if not cycles:
        print(f"import-cycles: {label}: {len(nodes)} modules, {n_edges} imports between them, no cycle")
        return True
    for component in cycles:
        cycle = shortest_cycle(component[0], component, edges)
        ring = " -> ".join(name(s) for s in cycle + [cycle[0]])
        print(f"import-cycles: {label}: import cycle: {ring}", file=sys.stderr)
        for a, b in zip(cycle, cycle[1:] + [cycle[0]]):
            path, line, text = where[(a, b)]
            print(f"    {name(a)} -> {name(b)}: {path}:{line}: {text}", file=sys.stderr)
        if len(component) > len(cycle):
            others = ", ".join(name(s) for s in component)
            print(f"    (all modules of this cycle's component: {others})", file=sys.stderr)
    return False


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    show_graph = "--graph" in argv
    ok = True
    for spec in [a for a in argv if a != "--graph"]:
        ok = check(spec, show_graph) and ok
    if not ok:
        print(
            "import-cycles: modules import each other in a circle: lay them out in one direction "
            "(STYLE.md §1, 'Layers in one direction inside src/')",
            file=sys.stderr,
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
