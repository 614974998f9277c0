"""`namegate -c FILE --check --bundle BUNDLE`: a signed policy bundle judged offline.

Keys and signatures are made by Debian's minisign at test time (-W: no password).
Run: NG_BUILD=build pytest-3 tests/policy/test_bundle.py
"""
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, os.environ.get("NG_BUILD", "build"))
NAMEGATE = os.path.join(BUILD, "dataplane", "namegate")

POLICY = """policies:
  p: {allow: [pypi.org]}
vms:
  - {name: a1, mac: "02:00:00:00:00:01", ipv4: 10.77.0.11, policy: p}
"""
FUTURE = "2030-01-01T00:00:00Z"

pytestmark = [
    pytest.mark.skipif(not os.path.exists(NAMEGATE), reason="namegate not built (no DPDK)"),
    pytest.mark.skipif(shutil.which("minisign") is None, reason="no minisign"),
]


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def tc(serial, until=FUTURE, fleet="prod", shard="rack1"):
    return f"namegate-bundle fleet={fleet} shard={shard} serial={serial} not_after={until}"


@pytest.fixture
def lab(tmp_path):
    for k in ("k1", "k2"):
        subprocess.run(["minisign", "-G", "-W", "-p", str(tmp_path / f"{k}.pub"),
                        "-s", str(tmp_path / f"{k}.sec")], check=True, capture_output=True)
    return tmp_path


def config(lab, keys="[k1.pub]", extra=""):
    path = lab / "ng.yaml"
    path.write_text(POLICY + f"fleet:\n  name: prod\n  shard: rack1\n  bundle_keys: {keys}\n"
                    f"  cache: {lab / 'cache.yaml'}\n" + extra)
    return str(path)


def bundle(lab, comment, name="bundle.yaml", key="k1", legacy=False, text=POLICY):
    path = lab / name
    path.write_text(text)
    subprocess.run(["minisign", "-S", "-W"] + (["-l"] if legacy else []) +
                   ["-s", str(lab / f"{key}.sec"), "-m", str(path), "-t", comment],
                   check=True, capture_output=True)
    return str(path)


def check(cfg, b):
    return run(NAMEGATE, "-c", cfg, "--check", "--bundle", b)


def test_accepted(lab):
    rc, out, err = check(config(lab), bundle(lab, tc(10)))
    assert (rc, err) == (0, "")
    assert out == ("accepted: fleet prod shard rack1 serial 10, valid until "
                   "2030-01-01T00:00:00Z (no cached bundle: any serial)\n")


def test_key_line_inline(lab):
    line = (lab / "k1.pub").read_text().splitlines()[1]
    rc, out, _ = check(config(lab, keys=f"[{line}]"), bundle(lab, tc(10), legacy=True))
    assert rc == 0 and out.startswith("accepted: fleet prod shard rack1 serial 10")


@pytest.mark.parametrize("comment,key,reason", [
    (tc(10), "k2", "refused: signed by key ID "),
    (tc(10, fleet="staging"), "k1",
     "refused: for fleet staging shard rack1, not fleet prod shard rack1\n"),
    (tc(10, shard="rack2"), "k1",
     "refused: for fleet prod shard rack2, not fleet prod shard rack1\n"),
    (tc(10, until="2020-01-01T00:00:00Z"), "k1", "refused: expired at 2020-01-01T00:00:00Z\n"),
    ("namegate-bundle fleet=prod shard=rack1 serial=10", "k1",
     "refused: trusted comment: no not_after\n"),
])
def test_refused(lab, comment, key, reason):
    rc, out, _ = check(config(lab), bundle(lab, comment, key=key))
    assert rc == 1
    assert out.startswith(reason), out


def test_tampered_file(lab):
    b = bundle(lab, tc(10))
    with open(b, "a") as f:
        f.write("  - {name: a2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: p}\n")
    rc, out, _ = check(config(lab), b)
    assert rc == 1 and out.startswith("refused: signature does not verify"), out


def test_policy_does_not_compile(lab):
    b = bundle(lab, tc(10), text=POLICY.replace("policy: p}", "policy: nope}"))
    rc, out, _ = check(config(lab), b)
    assert rc == 1
    assert out.startswith(f"refused: policy: {b}:4:"), out
    assert "unknown policy 'nope'" in out


def test_cache_serial(lab):
    """The cached bundle's serial is the running one; a cache that does not verify is not."""
    cfg = config(lab)
    bundle(lab, tc(9), name="cache.yaml")
    rc, out, _ = check(cfg, bundle(lab, tc(7)))
    assert rc == 1 and out == "refused: serial 7 is not above the running 9\n"
    rc, out, _ = check(cfg, bundle(lab, tc(10)))
    assert rc == 0 and out.endswith("(the cache's is 9)\n")
    bundle(lab, tc(99), name="cache.yaml", key="k2")
    rc, out, _ = check(cfg, bundle(lab, tc(7)))
    assert rc == 0
    assert out.startswith("note: the cache does not count: ")
    assert "accepted: fleet prod shard rack1 serial 7" in out


def test_missing_signature_and_key(lab):
    b = lab / "nosig.yaml"
    b.write_text(POLICY)
    rc, out, _ = check(config(lab), str(b))
    assert rc == 1 and out == f"refused: {b}.minisig: No such file or directory\n"
    rc, out, _ = check(config(lab, keys="[missing.pub]"), bundle(lab, tc(1)))
    assert rc == 1
    assert out.startswith('refused: fleet.bundle_keys[0]: "missing.pub" is neither a key'), out


def test_config_errors(lab):
    path = lab / "nofleet.yaml"
    path.write_text(POLICY)
    rc, out, _ = check(str(path), bundle(lab, tc(1)))
    assert rc == 1 and out.startswith("refused: ") and "has no fleet:" in out
    path.write_text(POLICY + "fleet:\n  name: prod\n  bundle_keys: [k1.pub]\n")
    rc, _, err = check(str(path), bundle(lab, tc(1)))
    assert rc == 1 and "fleet: shard is required" in err
    path.write_text(POLICY + "fleet:\n  name: pr od\n  shard: a\n  bundle_keys: [k1.pub]\n")
    rc, _, err = check(str(path), bundle(lab, tc(1)))
    assert rc == 1 and "fleet.name: \"pr od\" is not a name" in err
    rc, _, err = run(NAMEGATE, "-c", str(path), "--bundle", "x")
    assert rc == 2 and "--bundle goes with --check" in err


@pytest.mark.parametrize("extra, message", [
    ("  endpoints: [ftp://h:1]\n", "is not an etcd client URL"),
    ("  endpoints: [\"http://a b:1\"]\n", "is not an etcd client URL"),
    ("  endpoints: []\n", "0 endpoints, 1 to 16"),
    ("  endpoints: [http://h:1]\n  prefix: /a/../b/\n", "is not a key prefix"),
    ("  endpoints: [http://h:1]\n  prefix: /a\n", "is not a key prefix"),
    ("  endpoints: [http://h:1]\n  prefix: /a b/\n", "letters, digits"),
    ("  endpoints: [http://h:1]\n  user: gw1\n", "user and password_file go together"),
    ("  user: gw1\n  password_file: /x\n", "user without endpoints"),
    ("  gateway: a/b\n", "fleet.gateway: \"a/b\" is not a name"),
])
def test_store_config_errors(lab, extra, message):
    path = config(lab, extra=extra)
    rc, out, err = run(NAMEGATE, "-c", path, "--check")
    assert rc == 1 and message in err, (out, err)


def test_store_config_defaults(lab):
    """The prefix and the gateway's name have defaults that start: the fleet's, the host's."""
    path = config(lab, extra="  endpoints: [http://127.0.0.1:2379]\n")
    rc, out, err = run(NAMEGATE, "-c", path, "--check")
    assert rc == 0, err
