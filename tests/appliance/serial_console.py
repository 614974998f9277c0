"""The appliance's serial console as qemu serves it (a chardev socket): wait for text,
log in as root (changing the expired shipped password), and run shell commands with
their exit status."""

import re
import socket
import time


class ConsoleError(AssertionError):
    pass


class SerialConsole:
    PROMPT = rb"root@namegate:[^#]*# "

    def __init__(self, path, timeout=120.0):
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.sock.settimeout(1)
        self.seen = b""

    def close(self):
        self.sock.close()

    def expect(self, pattern, timeout=None):
        """Wait for pattern (bytes regex) in what arrived since the last match; consume up
        to its end and return the match."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = re.search(pattern, self.seen)
            if m:
                self.seen = self.seen[m.end():]
                return m
            if time.monotonic() > deadline:
                raise ConsoleError(f"no {pattern!r} on the console within "
                                   f"{timeout or self.timeout}s; last: {self.seen[-400:]!r}")
            try:
                chunk = self.sock.recv(4096)
            except socket.timeout:
                continue
            if not chunk:
                raise ConsoleError("the console closed (qemu exited?)")
            self.seen += chunk

    def send(self, line):
        self.sock.sendall(line.encode() + b"\r")

    def login(self, password, new_password):
        """root on the console. The image ships its password expired, so the first login
        sets new_password; returns at a shell prompt."""
        self.send("")   # a fresh prompt, whatever was printed over the last one
        self.expect(rb"login: ")
        self.send("root")
        self.expect(rb"Password: ")
        self.send(password)
        m = self.expect(rb"Current password: |New password: |" + self.PROMPT)
        if m.group(0) == b"Current password: ":
            self.send(password)
            m = self.expect(rb"New password: ")
        if m.group(0) == b"New password: ":
            self.send(new_password)
            self.expect(rb"Retype new password: ")
            self.send(new_password)
            self.expect(self.PROMPT)
        # no colours or pagers, and the shell's echo of a command is told apart from its
        # output by the markers below
        self.send("export TERM=dumb SYSTEMD_PAGER= PAGER=cat; stty -echo")
        self.expect(self.PROMPT)

    def run(self, command, timeout=None):
        """Run command in the logged-in shell; (exit status, output)."""
        self.seen = b""
        self.send(f"echo @@begin; {command}; echo @@rc=$?")
        m = self.expect(rb"(?s)@@begin\r?\n(.*?)@@rc=(\d+)", timeout)
        return int(m.group(2)), m.group(1).decode(errors="replace").replace("\r", "")
