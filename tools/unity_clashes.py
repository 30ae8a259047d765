#!/usr/bin/python3
"""Lists the source files that must not share a unity batch (cmake/BuildSpeed.cmake).

Two .cpp files of one library that both define a file-local function of one
name (anonymous namespace or `static`) break when CMake pastes them into one
batch: a redefinition error when the signatures agree, or worse, a call that
silently resolves to the other file's overload. The compiler cannot say which
helpers are file-local once files are pasted together, so this reads them from
the objects of a build made without src unity batches (-DVKUBE_UNITY_SRC=OFF):
its -g1 DWARF names every function declared in the .cpp itself that is not
external. -g1 keeps no namespaces, so the bare name is the key, which errs on
the side of keeping files apart.

Usage: tools/unity_clashes.py BUILD_DIR > cmake/UnityClashes.cmake
"""
import collections
import os
import re
import subprocess
import sys


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def last_component(mangled):
    """The last name of _ZN<len><id>...E when every component is a plain identifier."""
    i, last = 3, None
    while i < len(mangled) and mangled[i].isdigit():
        j = i
        while mangled[j].isdigit():
            j += 1
        n = int(mangled[i:j])
        last, i = mangled[j:j + n], j + n
    return last if i < len(mangled) and mangled[i] == 'E' else None


# File-scope constants, types and aliases, by their spelling at column 0 (Google
# style does not indent namespaces): -g1 DWARF has no variables or types.
SCOPE_NAMES = re.compile(
    r'^(?:static\s+|inline\s+)*(?:constexpr|const)\b[^=;({]*?\b(k[A-Z]\w*)\b'
    r'|^(?:struct|class|union|enum(?:\s+class)?)\s+(\w+)\s*(?:final\s*)?[:{]'
    r'|^using\s+(\w+)\s*=', re.M)


def scope_names(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return {next(g for g in m.groups() if g) for m in SCOPE_NAMES.finditer(f.read())}


def header_constants(root):
    names = set()
    for top in ('include', 'src'):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith('.h'):
                    names |= {n for n in scope_names(os.path.join(d, f)) if re.match(r'k[A-Z]', n)}
    return names


def functions(obj, source_name):
    """(file-local functions declared in source_name, external vkube functions) of `obj`."""
    lines = run('readelf', '--debug-dump=rawline', obj)
    own_files = {int(m.group(1)) for m in re.finditer(
        r'^\s+(\d+)\s+\d+\s+\(indirect line string, offset: 0x[0-9a-f]+\):\s+(\S+)$', lines, re.M)
        if m.group(2) == source_name}
    local, external = set(), set()
    for die in re.split(r'\n (?=<\d+><)', run('objdump', '--dwarf=info', obj)):
        head = die.split('\n', 1)[0]
        if not die.startswith('<1>') or 'DW_TAG_subprogram' not in head:
            continue
        name = re.search(r'DW_AT_name\s*:\s*(?:\(indirect string[^)]*\):\s*)?(\S+)', die)
        if not name or 'DW_AT_specification' in die:
            continue
        if 'DW_AT_external' in die:
            # A namespace-scope function of vkube's (not a member, not std's):
            # _ZN5vkube <namespaces> <name> E, every component a plain identifier.
            link = re.search(r'DW_AT_linkage_name\s*:.*?:\s*(_ZN5vkube\S+)', die)
            if link and last_component(link.group(1)) == name.group(1):
                external.add(name.group(1))
            continue
        decl = re.search(r'DW_AT_decl_file\s*:\s*(\d+)', die)
        if 'DW_AT_declaration' not in die and decl and int(decl.group(1)) in own_files:
            local.add(name.group(1))
    # -g1 DWARF does not say which of them are members of file-local classes,
    # which cannot clash; the symbol table does for those not inlined away.
    members, free = set(), set()
    for sym in run('nm', '-C', obj).splitlines():
        m = re.search(r'\(anonymous namespace\)::(?:(\w+)::)?(~?\w+)\(', sym)
        if m:
            (members if m.group(1) else free).add(m.group(2))
    local -= members - free
    return local, external


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    constants = header_constants(repo)
    by_target = collections.defaultdict(lambda: collections.defaultdict(list))
    external = collections.defaultdict(set)
    for root, _, files in os.walk(os.path.join(build, 'src')):
        for f in sorted(files):
            if not f.endswith('.cpp.o') or '/CMakeFiles/' not in root + '/':
                continue
            rel_dir, rest = os.path.relpath(root, build).split('/CMakeFiles/', 1)
            target, _, sub = rest.partition('.dir')
            source = os.path.normpath(os.path.join(rel_dir, sub.lstrip('/'), f[:-2]))
            local, ext = functions(os.path.join(root, f), os.path.basename(source))
            if not os.path.exists(os.path.join(repo, source)):
                continue  # generated in the build tree (embedded files)
            local |= scope_names(os.path.join(repo, source))
            external[target] |= ext | constants
            for name in local:
                by_target[target][name].append(source)
    print('# Generated by tools/unity_clashes.py: groups of src files that define a file-local')
    print('# function of one name and so must not share a unity batch (cmake/BuildSpeed.cmake).')
    # A file-local function named like one of vkube's namespace-scope functions
    # may meet its declaration in a header another file of the batch includes.
    solo = sorted({f for t, names in by_target.items() for n, files in names.items()
                   if n in external[t] for f in files})
    print('set(VKUBE_UNITY_SOLO_SRC')
    for f in solo:
        print('    %s' % f)
    print(')')
    print('set(VKUBE_UNITY_CLASHES')
    groups = sorted({'|'.join(sorted(set(files))) for names in by_target.values()
                     for files in names.values() if len(set(files)) > 1})
    for g in groups:
        print('    "%s"' % g)
    print(')')


if __name__ == '__main__':
    main()
