"""The HA pair in its lab (ha_lab.py): keepalived elects, only the master forwards, and
when the master's namegate dies (SIGKILL), hangs (SIGSTOP) or stops (SIGTERM) the other
box takes over and the VM's connections work again. Outages print as RESULT lines
(ha_outage_crash_s, ha_outage_hang_s, ha_outage_graceful_s); they do not fail a test.

Run: meson test -C BUILD --suite ha (root: network namespaces)."""
import json
import os
import signal
import time

from ha_lab import (BUDGET, EXTRA_VMS, GRANT_IP, NAMED, NAMED_IP, SRV_IP, SRV_PORT, SYNC_PORT,
                    sh, wait_until)

TAKEOVER = 20.0      # a cap for a wait, not a measure: keepalived's and namegate's starts
CONNS = 20           # the VM's long-lived TLS connections, kept through every failover
RESUME = 40.0        # a cap for a wait: TCP's retransmissions back off past the outage


def settled(lab):
    """(master, backup) once keepalived made one of each, else None. Both boxes start
    BACKUP and nopreempt: whichever may lead first leads."""
    return lab.settled()


def outage(res, at):
    """The gap the VM saw around `at` (monotonic): from the last connection before it that
    got its greeting to the first one after."""
    before = [t for t in res["ok"] if t <= at]
    after = [t for t in res["ok"] if t > at]
    assert before and after, f"no connection before or after the failover: {res}"
    return after[0] - before[-1]


def conns_kept(lab, name, since):
    """After a failover at `since` (monotonic): the VM's connections that exchanged whole
    rounds since, with no RST, timeout or byte amiss, once each has either done so or
    failed. Counted in lab.kept[name]; the failures are printed."""
    def moved():
        st = lab.conns.state()
        return st if all(c["error"] or c["last"] > since for c in st) else None
    try:
        st = wait_until(moved, RESUME, "every connection to move again", step=0.5)
    except AssertionError:      # a connection that hangs counts as lost
        st = lab.conns.state()
    kept = sum(1 for c in st if not c["error"] and c["last"] > since)
    lab.kept[name] = kept
    print(f"\nconnections kept through the {name}: {kept} of {CONNS}; "
          f"lost: {[c['error'] for c in st if c['error'] or c['last'] <= since]}")
    return kept


def test_1_one_box_forwards(lab):
    """With both boxes up, keepalived makes a master, and only it forwards: the VM's
    connections all get their greeting, the master's ports sent frames, the backup's sent
    none and it counted what it dropped as ha_standby; each role change is an event."""
    m, o = wait_until(lambda: settled(lab), TAKEOVER, "a master and a backup", step=0.2)
    lab.master, lab.backup = m, o
    res = lab.probe(2.0, timeout=0.9).result()    # under a SYN retransmit: a lost frame fails
    assert len(res["ok"]) == res["tried"] > 20, res
    assert lab.forwarded(m) > 0
    assert lab.forwarded(o) == 0
    dropped = lab.metrics(o).get('namegate_drops_total{reason="ha_standby"}', 0)
    assert dropped > 0
    assert lab.metrics(m).get('namegate_ha_role{role="master"}') == 1
    assert lab.metrics(o).get('namegate_ha_role{role="backup"}') == 1
    roles = [e["role"] for e in lab.events(m) if e["event"] == "ha_role"]
    assert roles[-1] == "master", roles
    h = lab.ha(m)
    assert h["healthy"] and h["instance"] == "namegate", h
    # from here to the crash the boxes only work: a role change before it (a watcher's
    # or a check's false FAULT under load) fails test_2
    lab.quiet = {r: lab.role_changes(r) for r in (m, o)}


def test_1b_bindings_synced(lab):
    """The VM resolves 1,000 names at 200 a second through the master: each binding reaches
    the standby's table over the sync stream, and none is missing there once the master's
    stream is acknowledged. The master times each record from its sending to the standby's
    acknowledgement of its install (namegate_ha_sync_lag_seconds): RESULT
    ha_bindings_missing counts those past 50 ms and those never installed, RESULT
    ha_sync_lag_p99_ms is the histogram's bucket holding the 99th percentile; neither
    fails the test. The named server opens only through its binding."""
    m, o = lab.master, lab.backup
    assert not lab.greeted(NAMED_IP)
    before = lab.ha(m)["sync"]["acked"]
    answered = lab.resolve(999, 200, first=[NAMED])     # the default DNS budget: 1,000
    assert len(answered) == 1000, len(answered)
    end = time.monotonic() + 10             # a cap, not a measure: the last acks
    while lab.ha(m)["sync"]["acked"] < before + len(answered) and time.monotonic() < end:
        time.sleep(0.1)
    missing = sorted(set(answered) - lab.bindings(o))
    hist = lab.metrics(m)
    buckets = sorted((float(k.split('le="')[1].rstrip('"}')), v) for k, v in hist.items()
                     if k.startswith("namegate_ha_sync_lag_seconds_bucket"))
    count = hist["namegate_ha_sync_lag_seconds_count"]
    p99 = next(le for le, v in buckets if v >= 0.99 * count)
    late = count - dict(buckets)[0.05]
    print(f"\nRESULT ha_bindings_missing={int(late) + len(missing)}")
    print(f"RESULT ha_sync_lag_p99_ms={p99 * 1e3:g}")
    assert missing == [], f"{len(missing)} missing on the standby, first {missing[:5]}"
    assert lab.greeted(NAMED_IP)


def test_1c_connections_synced(lab):
    """The VM opens 20 TLS connections to the named echo (admitted by its binding, the SNI
    judged) and exchanges bytes on each: once the server has acknowledged each hello their
    verdict is final, and the master reports them to the standby, which keeps them in its
    table of the pair's flows (not its live table)."""
    m, o = lab.master, lab.backup
    before = lab.ha(o)["sync"]["flows_installed"]
    lab.conns = lab.open_conns(CONNS)
    lab.kept = {}
    wait_until(lambda: all(c["rounds"] >= 3 or c["error"] for c in lab.conns.state()),
               TAKEOVER, "every connection to exchange bytes", step=0.2)
    st = lab.conns.state()
    assert [c["error"] for c in st if c["error"]] == []
    wait_until(lambda: lab.ha(o)["sync"]["flows_installed"] >= before + CONNS, TAKEOVER,
               "the standby to have the connections' records", step=0.2)
    standby = lab.metrics(o)
    assert standby["namegate_ha_flows"] >= CONNS
    assert standby["namegate_ha_adopted_total"] == 0
    assert standby['namegate_vm_flows{vm="vm1"}'] == 0     # not in its live table
    assert lab.metrics(m)['namegate_vm_flows{vm="vm1"}'] >= CONNS
SPEND = BUDGET * 58 // 100     # the upload's bytes; with their headers about 60 %


def test_1c_budget_spent_on_the_master(lab):
    """The VM spends about 60 % of its egress budget to the sink through the master: the
    standby's window holds what the master's does (each second's bytes go over the sync
    stream)."""
    m, o = lab.master, lab.backup
    took, read = lab.upload(SPEND)
    assert took == read == SPEND, (took, read)
    wait_until(lambda: (lab.budget_used(m) or 0) > SPEND, 10, "the master's window", step=0.2)
    wait_until(lambda: lab.budget_used(o) == lab.budget_used(m), TAKEOVER,
               "the standby's window to hold the master's bytes", step=0.2)
    assert BUDGET * 0.55 < lab.budget_used(o) < BUDGET * 0.7, lab.budget_used(o)


def test_1d_grant_on_the_master(lab):
    """A grant made on the master's socket opens a server the policy does not allow, and
    the standby has it too, with the time it has left (no fleet store: the grants go on
    the stream)."""
    m, o = lab.master, lab.backup
    host = f"{GRANT_IP}:{SRV_PORT}"
    assert not lab.greeted(GRANT_IP)
    sh([lab.ctl, "-s", lab.path(m, "ng.sock"), "grant", "vm1", host, "--for", "10m"])
    assert lab.greeted(GRANT_IP)
    wait_until(lambda: [g["host"] for g in lab.ctl_json(o, "grants", "vm1")["grants"]] ==
               [host], 10, "the standby to have the grant", step=0.2)
    left = lab.ctl_json(o, "grants", "vm1")["grants"][0]["left"]
    assert 500 < left <= 600, left


def test_2_crash_of_the_masters_namegate(lab):
    """SIGKILL of the master's namegate (its keepalived runs on): the health check fails,
    keepalived hands over, the other box becomes master, announces every configured VM on
    the uplink (the server sees each one's gratuitous ARP, though they outnumber the
    queue to the port), and the VM's new connections get their greeting again."""
    m, o = lab.master, lab.backup
    assert settled(lab) == (m, o)
    assert {r: lab.role_changes(r) for r in (m, o)} == lab.quiet, "a role changed"
    fwd = lab.forwarded(o)
    sniffer = lab.sniff()
    probe = lab.probe(8.0)
    time.sleep(0.5)
    at = time.monotonic()
    os.kill(lab.pid(f"namegate-{m}"), signal.SIGKILL)
    wait_until(lambda: lab.role(o) == "master", TAKEOVER, f"{o} to take over", step=0.05)
    res = probe.result()
    gap = outage(res, at)
    print(f"\nRESULT ha_outage_crash_s={gap:.3f}")
    assert lab.forwarded(o) > fwd
    assert res["ok"][-1] > at + gap / 2
    assert sniffer.stop() == 1 + EXTRA_VMS
    lab.master, lab.backup = o, m
    changes = [(e["from"], e["role"]) for e in lab.events(o) if e["event"] == "ha_role"]
    assert changes[-1] == ("backup", "master"), changes
    assert conns_kept(lab, "crash", at) > 0
    assert lab.metrics(o)["namegate_ha_adopted_total"] > 0


def test_2b_binding_survives_the_crash(lab):
    """After the crash, a new connection to the address the VM resolved through the old
    master works through the new one, which never saw the answer: its binding came over
    the sync stream."""
    assert lab.greeted(NAMED_IP)


def test_2c_midstream_without_record_fails_closed(lab):
    """On the new master, segments from the VM in the middle of a connection nobody
    reported (ACK and data on a port of their own) open no flow: the server sees none of
    them, and the master counts them as adoptions refused for want of a record; a SYN
    from the same port then opens as any does (the server sees it: the path was open)."""
    m = lab.master
    key = 'namegate_ha_adopt_refused_total{reason="no_record"}'
    before = lab.metrics(m)[key]
    seen = lab.midstream(40123, SRV_IP, SRV_PORT)
    assert seen["other"] == 0, seen
    assert seen["syn"] >= 1, seen
    assert lab.metrics(m)[key] >= before + 3
def test_2c_budget_refused_at_100_percent_on_the_other_box(lab):
    """Through the new master, which never forwarded a byte of the first upload, the VM
    uploads as much again: the sink reads only what the budget had left (the whole of it
    would pass if the window had not come over the stream), and the next connection
    through the budget is refused."""
    m = lab.master
    first = lab.sunk()[0]
    took, read = lab.upload(SPEND)
    print(f"\nbudget: {first} bytes read through the first box, {read} through the second "
          f"(limit {BUDGET} IP bytes)")
    assert read < SPEND, (first, read)
    assert first + read <= BUDGET
    assert first + read >= BUDGET * 0.85, (first, read)     # refused at 100 %, not before
    wait_until(lambda: lab.budget_used(m) >= BUDGET, 10, "the window to be spent", step=0.2)
    took, _ = lab.upload(1000, opens=False)
    assert took == 0
    assert lab.sunk()[2:] == []             # the refused connection never reached it


def test_2d_grant_works_on_the_other_box(lab):
    """The grant made on the old master's socket opens its server through the new one."""
    assert lab.greeted(GRANT_IP)


def test_2e_dns_name_budget_spent_on_the_other_box(lab):
    """The VM's 1,000 new names under *.sync.test (test_1b, the default DNS name budget)
    went through the old master: the new one counted them as they were admitted, so a
    new name is refused (dns_budget), while one asked before still resolves."""
    got = lab.resolve(0, 50, first=["n5000.sync.test", "n5.sync.test"])
    assert "n5.sync.test" in got, got
    assert "n5000.sync.test" not in got, got


def test_3_restarted_box_stays_backup_then_hang(lab):
    """The crashed box's namegate starts again: after its start it may lead again, has
    the master's 1,000 bindings and the records of the VM's connections back (the master's
    resync on the new connection), and
    keepalived (nopreempt, as the sample has it) keeps it backup: the master goes on
    forwarding, it forwards nothing. Then the master's namegate hangs (SIGSTOP): its check
    times out, the other takes over and the VM's new connections get their greeting again."""
    m, o = lab.master, lab.backup           # o: the crashed one
    lab.start_namegate(o)
    wait_until(lambda: (lab.ha(o) or {}).get("healthy"), TAKEOVER, f"{o} to be healthy",
               step=0.2)
    wait_until(lambda: lab.role(o) == "backup", TAKEOVER, f"{o} to be backup", step=0.2)
    assert lab.role(m) == "master"
    # its table came back whole: the master's resync on the new connection
    wait_until(lambda: len(lab.bindings(o)) >= 1000, TAKEOVER, f"{o}'s bindings back",
               step=0.2)
    # and the VM's connections, which the master adopted: the resync's flows
    wait_until(lambda: lab.metrics(o).get("namegate_ha_flows", 0) >= CONNS, TAKEOVER,
               f"{o}'s records of the connections back", step=0.2)
    # and the budget's window and the grant, from the same resync
    wait_until(lambda: lab.budget_used(o) == lab.budget_used(m), TAKEOVER,
               f"{o}'s budget window back", step=0.2)
    assert lab.budget_used(o) >= BUDGET
    assert [g["host"] for g in lab.ctl_json(o, "grants", "vm1")["grants"]] == \
        [f"{GRANT_IP}:{SRV_PORT}"]
    # and the DNS name budget's questions (test_1b's 1,000, which the master kept as they
    # came), charged here again: its workers' memory of them died with the crash
    wait_until(lambda: ((lab.ha(o) or {}).get("sync") or {}).get("names_in", 0) >= 1000,
               TAKEOVER, f"{o}'s name budget back", step=0.2)
    assert lab.ha(o)["sync"]["names_dropped"] == 0
    fwd = lab.forwarded(o)
    res = lab.probe(1.0, timeout=0.9).result()    # under a SYN retransmit: a lost frame fails
    assert len(res["ok"]) == res["tried"], res
    assert lab.forwarded(o) == fwd
    probe = lab.probe(8.0)
    time.sleep(0.5)
    at = time.monotonic()
    pid = lab.pid(f"namegate-{m}")
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: lab.role(o) == "master", TAKEOVER, f"{o} to take over", step=0.05)
        res = probe.result()
    finally:
        os.kill(pid, signal.SIGCONT)
    gap = outage(res, at)
    print(f"\nRESULT ha_outage_hang_s={gap:.3f}")
    assert lab.forwarded(o) > fwd
    assert res["ok"][-1] > at + gap / 2
    lab.master, lab.backup = o, m
    assert conns_kept(lab, "hang", at) > 0


def test_4_graceful_stop(lab):
    """SIGTERM of the master's namegate: it says so in keepalived's track file, keepalived
    (inotify) hands over at once, and namegate forwards until it is no longer master, then
    stops: its last role before its stop event is not master, and the VM's new connections
    go on through the other box."""
    m, o = lab.master, lab.backup
    wait_until(lambda: lab.role(o) == "backup", TAKEOVER, f"{o} to be backup", step=0.2)
    wait_until(lambda: (lab.ha(o) or {}).get("healthy"), TAKEOVER, f"{o} to be healthy",
               step=0.2)
    fwd = lab.forwarded(o)
    probe = lab.probe(6.0)
    time.sleep(0.5)
    at = time.monotonic()
    p = lab.procs[f"namegate-{m}"]
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 0
    wait_until(lambda: lab.role(o) == "master", TAKEOVER, f"{o} to take over", step=0.05)
    res = probe.result()
    gap = outage(res, at)
    print(f"\nRESULT ha_outage_graceful_s={gap:.3f}")
    assert lab.forwarded(o) > fwd
    events = lab.events(m)
    stop = max(i for i, e in enumerate(events) if e["event"] == "stop")
    roles = [e["role"] for e in events[:stop] if e["event"] == "ha_role"]
    assert roles[-1] != "master", roles
    assert conns_kept(lab, "graceful stop", at) > 0


def test_4b_hang_of_the_whole_box(lab):
    """The master hangs whole (namegate, keepalived and its VRRP child: SIGSTOP), as a
    box whose VM is paused does: its adverts stop, the other box takes over by VRRP alone,
    adopts the VM's connections, and they go on. The stopped box (test_4) is started
    again first and resynced; the frozen one, resumed, holds until its peer's resync.
    RESULT ha_outage_box_hang_s is its outage (ha_outage_hang_s: namegate's alone)."""
    for r in ("a", "b"):
        if lab.procs[f"namegate-{r}"].poll() is not None:  # test_4 stopped it
            lab.start_namegate(r)
    m, o = wait_until(lambda: settled(lab), TAKEOVER, "one master and one backup", step=0.2)
    wait_until(lambda: (lab.ha(o) or {}).get("healthy") and
               lab.metrics(o).get("namegate_ha_flows", 0) >= CONNS, TAKEOVER,
               f"{o} healthy, with the records of the connections", step=0.2)
    with open(lab.path(m, "vrrp.pid")) as f:       # keepalived's VRRP child, which elects
        vrrp = int(f.read())
    pids = [lab.pid(f"namegate-{m}"), lab.pid(f"keepalived-{m}"), vrrp]
    probe = lab.probe(6.0)
    time.sleep(0.5)
    at = time.monotonic()
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: lab.role(o) == "master", TAKEOVER, f"{o} to take over", step=0.05)
        res = probe.result()
        kept = conns_kept(lab, "hang of the whole box", at)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    gap = outage(res, at)
    print(f"\nRESULT ha_outage_box_hang_s={gap:.3f}")
    assert kept > 0
    # the resumed box's adverts may take the lead back (VRRP's priority, not preemption):
    # its gate holds until its peer's resync either way (test_ha_guard)
    lab.master, lab.backup = wait_until(lambda: settled(lab), TAKEOVER,
                                        "one master and one backup again", step=0.2)


def test_5_connections_kept(lab):
    """The VM's 20 TLS connections, the same ones through the crash, the hang, the
    graceful stop and the hang of the whole box: RESULT ha_connections_kept is how many
    were whole after the worst of the four (each failover's count includes what the
    earlier ones lost), and all are: each connection's record reached the standby before
    the failover (test_1c, and the resync's flows in test_3 and test_4b), and TCP's
    retransmissions find the new master."""
    assert len(lab.kept) == 4, lab.kept
    print(f"\nRESULT ha_connections_kept={min(lab.kept.values())}")
    assert min(lab.kept.values()) == CONNS, lab.kept


def test_6_revoke_made_while_the_peer_is_down_wins(lab):
    """The grant of test_1d (the backup, stopped by test_4, started again and resynced
    first), revoked on the master while the backup's namegate is down
    (SIGKILL: its state file still holds the grant), stays revoked once the backup is
    back: the backup's resync offers the grant, the master refuses it and sends the revoke
    back, and the backup ends it too. Without the kept revoke the resync brings the grant
    back on the master and the VM reaches the server again."""
    host = f"{GRANT_IP}:{SRV_PORT}"

    def hosts(r):
        """r's grants of vm1, or None while its namegate does not answer."""
        cp = sh([lab.ctl, "-s", lab.path(r, "ng.sock"), "grants", "vm1", "--json"],
                check=False, timeout=10)
        return [g["host"] for g in json.loads(cp.stdout)["grants"]] \
            if cp.returncode == 0 else None

    for r in ("a", "b"):
        if lab.procs[f"namegate-{r}"].poll() is not None:  # test_4 stopped it
            lab.start_namegate(r)
    wait_until(lambda: settled(lab), TAKEOVER, "one master and one backup", step=0.2)
    m, o = settled(lab)
    wait_until(lambda: hosts(o) == [host] and hosts(m) == [host], TAKEOVER,
               "both boxes to hold the grant", step=0.2)
    p = lab.procs[f"namegate-{o}"]
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    gid = next(g["id"] for g in lab.ctl_json(m, "grants", "vm1")["grants"]
               if g["host"] == host)
    sh([lab.ctl, "-s", lab.path(m, "ng.sock"), "revoke", str(gid)])
    assert not lab.greeted(GRANT_IP)
    lab.start_namegate(o)
    wait_until(lambda: (lab.ha(o) or {}).get("healthy"), TAKEOVER, f"{o} to be healthy",
               step=0.2)
    # the backup's own resync went to the master, the master's revoke came back
    wait_until(lambda: hosts(o) == [], TAKEOVER, f"{o} to end the grant", step=0.2)
    assert hosts(m) == []
    assert not lab.greeted(GRANT_IP)


def test_7_vanished_peer_is_found(lab):
    """The sync stream's packets dropped on the master's HA link (no FIN, no RST: as a
    peer powered off or a cut cable looks): both ends find the connection dead by TCP's
    keepalives and user timeout and go back to connecting, and the stream opens again
    once the link carries it. Without them the connections looked open for good."""
    wait_until(lambda: settled(lab), TAKEOVER, "one master and one backup", step=0.2)
    m, o = settled(lab)
    ends = (("peer_state", "open"), ("inbound", "open"))

    def sync(r, key):
        return ((lab.ha(r) or {}).get("sync") or {}).get(key)

    wait_until(lambda: all(sync(r, k) == v for r in (m, o) for k, v in ends), TAKEOVER,
               "the pair's streams open", step=0.2)
    sh(["nft", "-f", "-"], ns=lab.ns[m], input=(
        "table inet ngsync {\n"
        f" chain in {{ type filter hook input priority 0; iifname ha0 tcp sport {SYNC_PORT} "
        f"drop; iifname ha0 tcp dport {SYNC_PORT} drop; }}\n"
        f" chain out {{ type filter hook output priority 0; oifname ha0 tcp sport {SYNC_PORT} "
        f"drop; oifname ha0 tcp dport {SYNC_PORT} drop; }}\n}}\n"))
    try:
        wait_until(lambda: all(sync(r, k) != v for r in (m, o) for k, v in ends), TAKEOVER,
                   "both boxes to find the streams dead", step=0.2)
    finally:
        sh(["nft", "delete", "table", "inet", "ngsync"], ns=lab.ns[m], check=False)
    wait_until(lambda: all(sync(r, k) == v for r in (m, o) for k, v in ends), TAKEOVER,
               "the streams open again", step=0.2)
