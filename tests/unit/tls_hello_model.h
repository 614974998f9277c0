/* The ClientHello model test_tls_hello_model holds tls_hello_parse() to. */
#ifndef NAMEGATE_TESTS_TLS_HELLO_MODEL_H
#define NAMEGATE_TESTS_TLS_HELLO_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "sni/tls.h"

/* The handshake message m (header included), as the parser must read it. */
enum sni_status model_msg(const uint8_t *m, size_t n, struct tls_hello *out);

#endif
