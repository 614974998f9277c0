"""Hostnames an agent VM resolves and connects to, and what DNS answers for each: the
registries and services a build or an agent really talks to, then made-up names in the
shapes hosting platforms hand out (CDN edges, object stores, PaaS apps, punycode, deep and
very long names). Every random choice comes from the rng passed in."""
import string

# Package registries, code hosts, CDNs, model APIs and distribution mirrors.
SERVICES = """
pypi.org files.pythonhosted.org upload.pypi.org test.pypi.org bootstrap.pypa.io
registry.npmjs.org registry.yarnpkg.com repo.yarnpkg.com npm.pkg.github.com nodejs.org
github.com api.github.com codeload.github.com uploads.github.com gist.github.com ghcr.io
raw.githubusercontent.com objects.githubusercontent.com avatars.githubusercontent.com
release-assets.githubusercontent.com pkg-containers.githubusercontent.com
gitlab.com registry.gitlab.com bitbucket.org crates.io static.crates.io index.crates.io
static.rust-lang.org sh.rustup.rs proxy.golang.org sum.golang.org go.dev dl.google.com
storage.googleapis.com oauth2.googleapis.com rubygems.org index.rubygems.org
repo.maven.apache.org repo1.maven.org plugins.gradle.org services.gradle.org
registry-1.docker.io auth.docker.io production.cloudflare.docker.com quay.io gcr.io
mcr.microsoft.com public.ecr.aws deb.debian.org security.debian.org archive.ubuntu.com
security.ubuntu.com dl-cdn.alpinelinux.org mirrors.fedoraproject.org conda.anaconda.org
huggingface.co cdn-lfs.huggingface.co cdn.jsdelivr.net unpkg.com cdnjs.cloudflare.com
api.openai.com api.anthropic.com api.mistral.ai api.groq.com api.together.xyz
sentry.io api.stripe.com hooks.slack.com s3.amazonaws.com sts.amazonaws.com
login.microsoftonline.com management.azure.com graph.microsoft.com docs.rs
stackoverflow.com en.wikipedia.org docs.python.org developer.mozilla.org astral.sh
download.pytorch.org api.nuget.org repo.packagist.org cran.r-project.org open-vsx.org
""".split()

# Mirrors that plain-HTTP package managers fetch from: host -> path prefix.
APT_MIRRORS = ["deb.debian.org", "security.debian.org", "archive.ubuntu.com",
               "security.ubuntu.com"]
APK_MIRRORS = ["dl-cdn.alpinelinux.org"]

SYLLABLES = """
amber anvil aspen basalt bramble canyon cinder cobalt copper dune ember fable fjord
garnet glacier harbor hazel indigo jasper juniper kelp lagoon lantern marble meadow
mesa nimbus nectar obsidian orchid otter pepper prairie quarry quince raven reed
sable saffron sequoia shale sorrel spruce tansy thistle tundra umber velvet walnut
willow yarrow zinc atlas beacon circuit delta ferry grove kernel ledger matrix orbit
pixel relay signal socket spark vector
""".split()
SUFFIXES = ["labs", "cloud", "works", "data", "ops", "stack", "hub", "dev", "io", "ai"]
TLDS = ["com", "com", "com", "com", "io", "io", "net", "org", "dev", "ai", "app", "co.uk",
        "de", "cloud"]
REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-northeast-1"]
ALNUM = string.ascii_lowercase + string.digits

# provider -> (IPv4 /16 prefixes, IPv6 /32 prefix or None, share of names with AAAA)
PROVIDERS = {
    "fastly": (["151.101", "199.232"], "2a04:4e42", 1.0),
    "cloudflare": (["104.16", "104.18", "172.64", "172.67"], "2606:4700", 1.0),
    "cloudfront": (["13.32", "18.160", "99.86", "108.156"], "2600:9000", 0.7),
    "akamai": (["23.50", "23.212", "2.19", "184.28"], "2a02:26f0", 0.6),
    "google": (["142.250", "172.217", "34.107"], "2607:f8b0", 1.0),
    "azure": (["20.60", "40.112", "13.107"], "2603:1030", 0.3),
    "github": (["140.82", "185.199"], None, 0.0),
    "aws": (["52.216", "54.231", "3.5", "16.15"], "2600:1f18", 0.4),
    "hosting": (["45.79", "95.217", "138.68", "159.69", "178.128", "5.75"], "2a01:4f8", 0.3),
}

# Which provider serves a name, by its ending; first match wins.
PROVIDER_BY_SUFFIX = [
    ("githubusercontent.com", "github"), ("github.com", "github"), ("ghcr.io", "github"),
    ("github.io", "github"), ("pythonhosted.org", "fastly"), ("pypi.org", "fastly"),
    ("pypa.io", "fastly"), ("rubygems.org", "fastly"), ("crates.io", "fastly"),
    ("python.org", "fastly"), ("npmjs.org", "cloudflare"), ("yarnpkg.com", "cloudflare"),
    ("docker.com", "cloudflare"), ("docker.io", "cloudflare"), ("huggingface.co", "cloudflare"),
    ("jsdelivr.net", "cloudflare"), ("unpkg.com", "cloudflare"), ("cloudflare.com", "cloudflare"),
    ("openai.com", "cloudflare"), ("anthropic.com", "cloudflare"), ("nodejs.org", "cloudflare"),
    ("astral.sh", "cloudflare"), ("pages.dev", "cloudflare"), ("googleapis.com", "google"),
    ("google.com", "google"), ("golang.org", "google"), ("go.dev", "google"),
    ("gcr.io", "google"), ("cloudfront.net", "cloudfront"), ("rust-lang.org", "cloudfront"),
    ("rustup.rs", "cloudfront"), ("pytorch.org", "cloudfront"), ("quay.io", "cloudfront"),
    ("ecr.aws", "cloudfront"), ("amazonaws.com", "aws"), ("microsoft.com", "azure"),
    ("microsoftonline.com", "azure"), ("azure.com", "azure"), ("windows.net", "azure"),
    ("nuget.org", "azure"), ("debian.org", "akamai"), ("ubuntu.com", "akamai"),
    ("maven.org", "akamai"), ("apache.org", "akamai"), ("gradle.org", "akamai"),
]


def word(rng):
    return rng.choice(SYLLABLES)


def token(rng, n):
    return "".join(rng.choice(ALNUM) for _ in range(n))


# Shapes of made-up names, with weights: (weight, maker).
SHAPES = [
    (18, lambda r: "%s%s.%s" % (word(r), word(r), r.choice(TLDS))),
    (10, lambda r: "api.%s%s.%s" % (word(r), r.choice(SUFFIXES), r.choice(TLDS))),
    (6, lambda r: "www.%s-%s.%s" % (word(r), word(r), r.choice(TLDS))),
    (5, lambda r: "cdn.%s%s.net" % (word(r), word(r))),
    (5, lambda r: "%s-%s-%d.s3.%s.amazonaws.com" % (word(r), word(r), r.randrange(1000),
                                                     r.choice(REGIONS))),
    (4, lambda r: "d%s.cloudfront.net" % token(r, 13)),
    (3, lambda r: "%s%d.blob.core.windows.net" % (word(r), r.randrange(10, 100))),
    (4, lambda r: "%s-%s.pages.dev" % (word(r), word(r))),
    (3, lambda r: "%s%d.github.io" % (word(r), r.randrange(100))),
    (3, lambda r: "%s.readthedocs.io" % word(r)),
    (8, lambda r: "%s.%s%s.%s" % (r.choice(["auth", "static", "assets", "events", "ws",
                                            "telemetry", "updates", "download"]),
                                  word(r), r.choice(SUFFIXES), r.choice(TLDS))),
    (2, lambda r: "o%d.ingest.sentry.io" % r.randrange(100000, 9999999)),
    (1, lambda r: ".".join(word(r) for _ in range(5)) + ".com"),
    (1, lambda r: "xn--%s-%s.%s" % (word(r), token(r, 4), r.choice(["de", "jp", "com"]))),
]


def long_name(rng, i):
    """Over 100 bytes with a 63-byte label: longer than some inspectors' name buffers."""
    label = ("%s-" % word(rng) * 16)[:62] + "x"
    return "%s.%s%s.edge-pool-%d.mirrors.example-long.com" % (label, word(rng), word(rng), i)


def make_hosts(rng, count):
    """count distinct names: the services first, then made-up ones, then four long ones."""
    hosts = list(SERVICES[:max(0, count - 4)])
    seen = set(hosts)
    weights = [w for w, _ in SHAPES]
    makers = [m for _, m in SHAPES]
    while len(hosts) < count - 4:
        name = rng.choices(makers, weights)[0](rng)
        if name not in seen:
            seen.add(name)
            hosts.append(name)
    return hosts + [long_name(rng, i) for i in range(min(4, count))]


def provider_of(host, rng):
    for suffix, provider in PROVIDER_BY_SUFFIX:
        if host == suffix or host.endswith("." + suffix):
            return provider
    return rng.choices(["hosting", "cloudflare", "cloudfront", "fastly", "aws", "google"],
                       [40, 22, 12, 8, 10, 8])[0]


def cname_chain(host, provider, rng):
    """The CNAMEs a recursive resolver follows from host, in order."""
    first = host.split(".")[0]
    if provider == "fastly":
        return ["dualstack.%s.map.fastly.net" % rng.choice(["n", "j", "python", "global"])]
    if provider == "cloudflare" and rng.random() < 0.25:
        return ["%s.cdn.cloudflare.net" % host]
    if provider == "cloudfront" and not host.endswith("cloudfront.net"):
        return ["d%s.cloudfront.net" % token(rng, 13)]
    if provider == "akamai":
        chain = ["%s.edgekey.net" % host, "e%d.a.akamaiedge.net" % rng.randrange(1000, 99999)]
        if rng.random() < 0.3:      # three hops: a mirror network's own alias first
            chain.insert(0, "%s.cdn.mirror-net.org" % first)
        return chain
    if provider == "azure":
        return ["%s.trafficmanager.net" % first,
                "%s-%d.%s.cloudapp.azure.com" % (first, rng.randrange(1, 9),
                                                 rng.choice(["eastus", "westeurope"]))]
    if provider == "aws" and ".s3." in host:
        return ["s3-r-w.%s.amazonaws.com" % host.split(".s3.")[1].split(".")[0]]
    if provider == "hosting" and rng.random() < 0.2:
        return ["lb-%d.%s" % (rng.randrange(1, 20), host)]
    return []


def addresses(provider, count, rng):
    """count distinct IPv4 addresses in one of the provider's /16s, and IPv6 ones if it has."""
    v4_prefixes, v6_prefix, v6_share = PROVIDERS[provider]
    prefix = rng.choice(v4_prefixes)
    v4 = []
    while len(v4) < count:
        a = "%s.%d.%d" % (prefix, rng.randrange(256), rng.randrange(1, 255))
        if a not in v4:
            v4.append(a)
    v6 = []
    if v6_prefix is not None and rng.random() < v6_share:
        v6 = ["%s:%x:%x::%x" % (v6_prefix, rng.randrange(1, 0x10000), i, rng.randrange(1, 0x10000))
              for i in range(min(count, 4))]
    return v4, v6


def dns_entry(host, rng):
    """What DNS answers for host: provider, CNAME chain, A and AAAA sets, TTL."""
    provider = provider_of(host, rng)
    count = {"fastly": 4, "cloudfront": 4, "github": 1, "azure": 1}.get(
        provider, rng.choice([1, 1, 2, 2, 3, 4, 8]))
    if host in ("registry.npmjs.org", "registry.yarnpkg.com"):
        count = 12          # a large answer set: more than some readers keep
    v4, v6 = addresses(provider, count, rng)
    return {"provider": provider, "chain": cname_chain(host, provider, rng), "a": v4,
            "aaaa": v6, "ttl": rng.choice([20, 60, 60, 300, 300, 300, 900, 3600])}


def dns_table(hosts, rng):
    return {h: dns_entry(h, rng) for h in hosts}


def unknown_name(rng, hosts):
    """A name that does not exist: a typo, a cluster-internal name, a search-domain guess."""
    kind = rng.randrange(3)
    if kind == 0:
        return rng.choice(hosts) + rng.choice(["x", "-dev", ".local"])
    if kind == 1:
        return "%s.%s.svc.cluster.local" % (word(rng), word(rng))
    return "%s.internal" % word(rng)
