#!/usr/bin/env python3
"""console_login.py SOCKET PASSWORD: logs in as root on the appliance's serial console (a
qemu chardev socket), sets a new password when the expired one is refused, and runs
`namegatectl status` and `systemctl reload namegate` in the shell. Exit 0 when both
succeed."""
import re
import socket
import sys
import time

TIMEOUT = 120


def main():
    path, password = sys.argv[1], sys.argv[2]
    new_password = "ng-test-" + password
    con = socket.socket(socket.AF_UNIX)
    con.connect(path)
    con.settimeout(1)
    seen = b""

    def expect(pattern):
        nonlocal seen
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            m = re.search(pattern, seen)
            if m:
                seen = seen[m.end():]
                return m
            try:
                seen += con.recv(4096)
            except socket.timeout:
                pass
        sys.exit(f"console_login: no {pattern!r} within {TIMEOUT}s; last output: {seen[-400:]!r}")

    def send(line):
        con.sendall(line.encode() + b"\r")

    send("")  # a fresh prompt, whatever was printed over the last one
    expect(rb"login: ")
    send("root")
    expect(rb"Password: ")
    send(password)
    # the image ships the password expired: the first login must change it
    m = expect(rb"Current password: |New password: |root@namegate:~# ")
    if m.group(0) == b"Current password: ":
        send(password)
        m = expect(rb"New password: ")
    if m.group(0) == b"New password: ":
        send(new_password)
        expect(rb"Retype new password: ")
        send(new_password)
        expect(rb"root@namegate:~# ")
    send("namegatectl status; echo status-exit=$?")
    expect(rb"uplink port +0000:00:05\.0")
    expect(rb"status-exit=0")
    send("systemctl reload namegate; echo reload-exit=$?")
    expect(rb"reload-exit=0")
    print("console_login: logged in as root, changed the expired password, "
          "namegatectl status and systemctl reload namegate ok")


if __name__ == "__main__":
    main()
