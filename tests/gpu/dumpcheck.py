"""dumpcheck.py — what the checkers of tests/gpu/callstack_dump's output share: PASS/FAIL lines
counted for the exit status, and the dump's records ("KIND key=value ... [text=...]") as dicts."""

failures = 0


def check(ok, what):
    """One PASS or FAIL line; failures counts the FAILs (the checker's exit status)."""
    global failures
    print("%s: %s" % ("PASS" if ok else "FAIL", what))
    failures += 0 if ok else 1


def parse_dump(path):
    """The records of a callstack_dump output, in order; note/config/dropped keep text= whole."""
    recs = []
    with open(path) as f:
        for line in f:
            kind, _, rest = line.rstrip("\n").partition(" ")
            d = {"kind": kind}
            if kind in ("note", "config", "dropped"):
                head, _, text = rest.partition("text=")
                d["text"] = text
                rest = head
            for kv in rest.split():
                k, _, v = kv.partition("=")
                d[k] = v
            recs.append(d)
    return recs
