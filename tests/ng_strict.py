"""pytest plugin for the test command (tests/run.sh loads it with -p ng_strict): a suite
that runs no case, or skips any, fails instead of counting as passed; a missing root, a
missing DPDK or a missing capture is a failure the user sees, not a quiet "OK". Each
session also appends its counts to $NG_CASES_LOG, from which run.sh prints how many cases
ran and how many of them ran through the real daemon: with one of the lab's namegate
processes (lab_namegate.LIVE_DAEMONS) alive while the case ran."""
import json
import os
import sys

_THROUGH_DAEMON = set()


def _daemon_alive():
    lab = sys.modules.get("lab_namegate")
    return any(d.alive() for d in getattr(lab, "LIVE_DAEMONS", ()))


def pytest_runtest_logreport(report):
    if report.when == "call" and _daemon_alive():
        _THROUGH_DAEMON.add(report.nodeid)


def _counts(session):
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = tr.stats if tr is not None else {}
    return {k: len(stats.get(k, [])) for k in ("passed", "failed", "error", "skipped")}


def pytest_sessionfinish(session, exitstatus):
    counts = _counts(session)
    why = None
    if counts["skipped"]:
        why = f"{counts['skipped']} case(s) skipped: the test command runs every case"
    elif counts["passed"] == 0 and exitstatus == 0:
        why = "no case ran: a suite that runs nothing has tested nothing"
    if why:
        session.ng_strict_why = why
        session.exitstatus = 1
    log = os.environ.get("NG_CASES_LOG")
    if log and session.config.args:
        with open(log, "a") as f:
            suite = os.path.basename(os.path.normpath(str(session.config.args[0])))
            f.write(json.dumps({"suite": suite, **counts,
                                "daemon": len(_THROUGH_DAEMON)}) + "\n")


def pytest_terminal_summary(terminalreporter):
    why = getattr(terminalreporter._session, "ng_strict_why", None)
    if why:
        terminalreporter.write_line(f"ng_strict: FAILED: {why}", red=True)
