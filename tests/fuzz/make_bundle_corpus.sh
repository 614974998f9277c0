#!/bin/sh
# Seeds for fuzz_ctl_bundle from real minisign output: a fresh key signs the policy that
# fuzz_ctl_bundle.c holds (prehashed and legacy), and the key, the signatures and their
# trusted comments become corpus/ctl_bundle/ (first byte: 0 key, 1 comment, 2 signature).
# Prints the public key line to put in fuzz_ctl_bundle.c's fuzz_pub. The secret key is
# thrown away.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/corpus/ctl_bundle
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
minisign -G -W -p "$tmp/k.pub" -s "$tmp/k.sec" >/dev/null
cat >"$tmp/b.yaml" <<'END'
policies:
  p: {allow: [pypi.org]}
vms:
  - {name: a1, mac: "02:00:00:00:00:01", ipv4: 10.77.0.11, policy: p}
END
tc='namegate-bundle fleet=prod shard=rack1 serial=10 not_after=2030-01-01T00:00:00Z'
minisign -S -W -s "$tmp/k.sec" -m "$tmp/b.yaml" -x "$tmp/ed.sig" -t "$tc" >/dev/null
minisign -S -l -W -s "$tmp/k.sec" -m "$tmp/b.yaml" -x "$tmp/legacy.sig" -t "$tc" >/dev/null
{ printf '\000'; cat "$tmp/k.pub"; } >"$out/key_file"
{ printf '\000'; sed -n 2p "$tmp/k.pub"; } >"$out/key_line"
{ printf '\001'; printf '%s' "$tc"; } >"$out/comment"
{ printf '\001'; printf '%s %s' 'namegate-bundle not_after=2030-01-01T00:00:00Z' \
    'serial=18446744073709551615 shard=a fleet=b'; } >"$out/comment_order"
{ printf '\002'; cat "$tmp/ed.sig"; } >"$out/sig_prehashed"
{ printf '\002'; cat "$tmp/legacy.sig"; } >"$out/sig_legacy"
sed -n 2p "$tmp/k.pub"
