/*
 * What the policy matcher's unit tests build with: patterns added to a struct pol_builder
 * directly (no YAML), each on its own numbered line, and verdicts asked by text.
 */
#ifndef NAMEGATE_TESTS_POL_MATCH_FIXTURE_H
#define NAMEGATE_TESTS_POL_MATCH_FIXTURE_H

#include <stdint.h>

#include "policy/match.h"

/* the line the next pattern added says it came from, less one; builder_p() resets it */
extern uint32_t add_line;

/* Add "name" (kind exact or wild, name without "*.") to policy pol. */
void add_name(struct pol_builder *b, uint32_t pol, enum pol_kind kind, const char *name,
    uint16_t port, enum pol_list list);
/* Add addr/plen to policy pol. */
void add_addr(struct pol_builder *b, uint32_t pol, const char *addr, unsigned int plen,
    uint16_t port, enum pol_list list);
/* A builder with policy "p" (0), its patterns numbered from line 1 again. */
struct pol_builder *builder_p(void);
/* b's set, which must build; b is freed. */
struct pol_set *build(struct pol_builder *b);
enum pol_verdict name_v(const struct pol_set *s, uint32_t pol, const char *name,
    uint8_t proto, uint16_t port);
enum pol_verdict addr_v(const struct pol_set *s, uint32_t pol, const char *text,
    uint8_t proto, uint16_t port, const struct pol_rule **rule);

#endif
