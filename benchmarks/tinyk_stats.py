"""What the tinyk benchmarks (tinyk_chain.sh, tinyk_native.sh) read from tinyk's --stats line."""
import re


def stats_fields(text):
    """The numbers of `tinyk: stats: ...` in `text`: hits, misses, stores, the -ms figures
    (the first of each name), and the hit phases (read, verify, deserialize, relocate)."""
    f = {}
    for name, value in re.findall(r"([a-z-]+)=([0-9.]+)", text):
        f.setdefault(name, float(value))
    m = re.search(r"hit-ms=\(read ([0-9.]+) verify ([0-9.]+) deserialize ([0-9.]+) relocate ([0-9.]+)\)", text)
    if m:
        f["read"], f["verify"], f["deserialize"], f["relocate"] = map(float, m.groups())
    return f
