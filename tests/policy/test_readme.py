"""The README's configuration reference documents every key the loader knows: the keys
are read out of the loader's own field tables, so a key added there and not here fails."""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def loader_keys():
    keys = set()
    for name in os.listdir(os.path.join(ROOT, "policy", "load")):
        if name.endswith(".c"):
            with open(os.path.join(ROOT, "policy", "load", name)) as f:
                keys |= set(re.findall(r'\{ "([A-Za-z0-9_.]+)", YAML_', f.read()))
    return keys


def reference():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.index("## Configuration reference")
    return text[start:text.index("\n## ", start + 1)]


def test_every_loader_key_is_documented():
    keys, ref = loader_keys(), reference()
    assert len(keys) > 25, keys          # the tables were found and read
    documented = set(re.findall(r"`(?:[A-Za-z_]+(?:\[\])?\.)*([a-z0-9_]+)`", ref))
    missing = sorted(k for k in keys if k not in documented)
    assert not missing, f"keys the loader knows but README.md does not document: {missing}"
