"""A TLS client begun over memory BIOs (Python's ssl): its ClientHello is made and nothing
is sent, so a test sends the hello itself, whole, cut or rewritten, and may go on with the
handshake through the BIOs. The programs the lab runs in VMs import nothing of the lab:
they get this function's source, SOURCE, pasted in front of them."""
import inspect
import ssl


def tls_start(sni, ctx=None):
    """(tls, inc, out, hello): the client, its two BIOs and its ClientHello record. ctx
    None: a context that verifies nothing, for tests where only the hello matters."""
    if ctx is None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(inc, out, server_hostname=sni)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return tls, inc, out, out.read()


SOURCE = "import ssl\n" + inspect.getsource(tls_start) + "\n"
