"""pytest plugin for the test command (tests/run.sh loads it with -p ng_strict): a suite
that runs no case, or skips any, fails instead of counting as passed; a missing root, a
missing DPDK or a missing capture is a failure the user sees, not a quiet "OK". Each
session also appends its counts to $NG_CASES_LOG, from which run.sh prints how many cases
ran and how many of them started the real daemon (the lab records those in
$NG_DAEMON_STARTS: lab_namegate.record_daemon_start)."""
import json
import os


def _counts(session):
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = tr.stats if tr is not None else {}
    return {k: len(stats.get(k, [])) for k in ("passed", "failed", "error", "skipped")}


def _daemon_cases(nodeids):
    path = os.environ.get("NG_DAEMON_STARTS")
    if not path or not os.path.exists(path):
        return 0
    with open(path) as f:
        started = {line.strip() for line in f}
    return len(started & nodeids)


def pytest_sessionfinish(session, exitstatus):
    counts = _counts(session)
    nodeids = {item.nodeid for item in session.items}
    why = None
    if counts["skipped"]:
        why = f"{counts['skipped']} case(s) skipped: the test command runs every case"
    elif counts["passed"] == 0 and exitstatus == 0:
        why = "no case ran: a suite that runs nothing has tested nothing"
    if why:
        session.ng_strict_why = why
        session.exitstatus = 1
    log = os.environ.get("NG_CASES_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"suite": os.path.basename(str(session.config.rootpath)),
                                "args": [str(a) for a in session.config.args],
                                **counts, "daemon": _daemon_cases(nodeids)}) + "\n")


def pytest_terminal_summary(terminalreporter):
    why = getattr(terminalreporter._session, "ng_strict_why", None)
    if why:
        terminalreporter.write_line(f"ng_strict: FAILED: {why}", red=True)
