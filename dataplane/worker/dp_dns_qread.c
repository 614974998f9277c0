/*
 * A VM's query read for the fast path. Nearly every query has one shape: a header, one
 * question written out in place, and at most an OPT record whose owner is the root. That
 * shape is read in one pass (dp_dns_qread.h, inline for the datagram's path), and the
 * name's letter case found as it is copied; any other message goes to dns_msg_parse(),
 * which reads every shape. For the shape read there both fill struct dns_msg alike
 * (test_dp_dns_qread holds them to it).
 */
#include "dp_dns_int.h"
#include "dp_dns_qread.h"

enum dns_status
dp_dns_query_read(const uint8_t *msg, size_t len, struct dns_msg *q, bool *upper)
{
	return dp_dns_query_read_in(msg, len, q, upper);
}
