#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libuvnet.so must export exactly the functions and objects that the public
headers declare: nothing internal leaks, nothing public is forgotten in
lib/uvnet.map. Every export carries a symbol version.

Usage: exports.py NM LIBUVNET_SO HEADER_OR_DIR...  (a directory: its *.h)

The header reader is not a C parser: it relies on our headers' style (one
declaration per statement, no macros that declare functions). Static
inline functions, typedefs and type definitions are not symbols.
"""
import glob
import os
import re
import subprocess
import sys


def strip(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = re.sub(r'\\\n', ' ', text)
    # C++ linkage blocks are not declarations.
    text = re.sub(r'#ifdef __cplusplus.*?#endif', ' ', text, flags=re.S)
    return re.sub(r'^\s*#[^\n]*', ' ', text, flags=re.M)


def statements(text):
    """Top-level statements; a function body ends its definition."""
    out, cur, depth = [], '', 0
    for c in text:
        cur += c
        if c == '{':
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0 and re.search(r'\)\s*\{', cur) and \
                    not re.match(r'\s*(typedef|struct|union|enum)\b', cur):
                out.append(cur)
                cur = ''
        elif c == ';' and depth == 0:
            out.append(cur)
            cur = ''
    return [' '.join(s.split()) for s in out]


def symbols(stmt):
    if re.match(r'(typedef|static)\b', stmt) or stmt.endswith('}'):
        return []
    body = re.sub(r'\{.*\}', ' ', stmt)  # struct x { ... } y;
    fn = re.match(r'[^(]*?\b(\w+)\s*\(', body)
    if fn and not re.match(r'[^(]*\(\s*\*', body):
        return [fn.group(1)]
    obj = re.match(r'extern\b.*?\b(\w+)\s*(\[[^\]]*\])?\s*;$', body)
    return [obj.group(1)] if obj else []


def declared(headers):
    names = set()
    for path in headers:
        with open(path) as f:
            for s in statements(strip(f.read())):
                names.update(symbols(s))
    return names


def exported(nm, lib):
    """{name: version} of the defined dynamic symbols, the version nodes left out."""
    out = subprocess.run([nm, '-D', '--defined-only', '--format=posix', lib],
                         check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        name, kind = line.split()[:2]
        if kind == 'A':
            continue
        name, _, version = name.partition('@')
        syms[name] = version.lstrip('@')
    return syms


def main():
    nm, lib, headers = sys.argv[1], sys.argv[2], []
    for arg in sys.argv[3:]:
        headers += sorted(glob.glob(os.path.join(arg, '*.h'))) if os.path.isdir(arg) else [arg]
    want, have = declared(headers), exported(nm, lib)
    bad = 0
    for name in sorted(set(have) - want):
        print(f'exported but not declared in a public header: {name}')
        bad += 1
    for name in sorted(want - set(have)):
        print(f'declared in a public header but not exported: {name}'
              ' (lib/uvnet.map? defined?)')
        bad += 1
    for name in sorted(n for n, v in have.items() if not v):
        print(f'exported without a symbol version: {name}')
        bad += 1
    print(f'{len(have)} exported, {len(want)} declared, {bad} problems')
    return 1 if bad else 0


sys.exit(main())
