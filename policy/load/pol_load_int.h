/*
 * Private to policy/load: the load context, the YAML walker and the schema handlers.
 */
#ifndef POL_LOAD_INT_H
#define POL_LOAD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "policy/load.h"

/*
 * Nodes one load may visit. libyaml resolves aliases into shared (even cyclic) nodes, so
 * a small file can describe a huge or endless tree; the walk stops there with an error.
 */
#define POL_NODE_BUDGET		(1u << 20)
#define POL_IMPORT_BYTES_MAX	(16u << 20)	/* an import: file larger than this is refused */
#define POL_PATH_MAX		256		/* YAML key paths in messages: "vms[3].mac" */

/* A VM's policy: name, resolved once every policy is known. */
struct pol_vm_ref {
	char *policy;
	uint32_t line, col;
};

struct pol_ctx {
	const char *file;		/* the file being walked, as messages name it */
	char *dir;			/* directory of the config file, for import: */
	yaml_document_t *doc;
	struct pol_errs *errs;
	struct pol_config *cfg;
	struct pol_builder *b;
	struct pol_builder *bb;		/* budget host patterns: the same policies as b */
	struct pol_builder *ask_b;	/* ask: patterns, policies at b's indices */
	size_t budget;			/* nodes left to visit */
	bool budget_reported;
	struct pol_vm_ref *vref;	/* one per cfg->vms entry */
	bool seen_vms, seen_policies;
	size_t nimports;		/* entries in cfg->imports */
	uint32_t policy;		/* the policy being read */
	const char *policy_name;
};

struct pol_field;

/*
 * A schema handler: store node n (already checked to be of f->type) into obj + f->off.
 * path names n in messages. Returns 0, or -1 after reporting an error.
 */
typedef int pol_handler_fn(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f,
    void *obj, const char *path);

/* One key of a mapping: netplan-style { key, node type, handler } tables. */
struct pol_field {
	const char *key;
	yaml_node_type_t type;
	pol_handler_fn *fn;
	size_t off;			/* offsetof the field the handler fills */
	uint32_t min, max;		/* integers: accepted range */
	const char *const *words;	/* enumerations: NULL-terminated, stored as index */
	/*
	 * The mapping below this key: its value (pol_h_map), each value of a mapping of
	 * names (policies.NAME) or each item of a list (vms[], budgets[]). Every key the
	 * loader accepts is reached from pol_top_fields through sub.
	 */
	const struct pol_field *sub;
	bool required;
};

/* pol_err.c */
int pol_err_node(struct pol_ctx *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int pol_err_fatal(struct pol_ctx *c, const yaml_node_t *n, const char *msg);

/* pol_yaml.c */
int pol_yaml_parse(struct pol_ctx *c, const char *buf, size_t len, yaml_document_t *doc);
yaml_node_t *pol_node(struct pol_ctx *c, int id);
const char *pol_node_what(const yaml_node_t *n);
const char *pol_scalar(struct pol_ctx *c, yaml_node_t *n, const char *path);
int pol_walk_map(struct pol_ctx *c, yaml_node_t *map, const struct pol_field *fields,
    void *obj, const char *path);
char *pol_read_file(const char *path, size_t max, size_t *len, int *err);

pol_handler_fn pol_h_str;		/* char * */
pol_handler_fn pol_h_u32;		/* uint32_t within min..max */
pol_handler_fn pol_h_bool;		/* bool: true/false, yes/no, on/off */
pol_handler_fn pol_h_enum;		/* an enum, index into words */
pol_handler_fn pol_h_str_list;		/* char ** + count right after it */
pol_handler_fn pol_h_map;		/* walk f->sub on the same obj */
yaml_node_t *pol_map_get(struct pol_ctx *c, yaml_node_t *map, const char *key);

/* pol_duration.c */
int pol_duration_parse(const char *s, uint32_t *out);
void pol_duration_str(uint32_t seconds, char *buf, size_t len);
pol_handler_fn pol_h_duration;		/* uint32_t seconds within min..max: "90s", "1h30m" */

/* pol_size.c */
pol_handler_fn pol_h_size;		/* uint64_t bytes, 1B..POL_SIZE_MAX: "100MB" */

/* pol_budget.c */
extern const struct pol_field pol_budget_fields[];
pol_handler_fn pol_h_budgets;		/* policies.NAME.budgets */
/* check: "; counted in policies.P.budgets[i] "host": SIZE per DURATION", if one counts p. */
void pol_budget_explain(const struct pol_config *cfg, uint32_t policy,
    const struct pol_pattern *p, FILE *out);

/* pol_config.c */
extern const struct pol_field pol_top_fields[];
int pol_parse_addr(const char *s, struct pol_addr *a);
/* The control sockets' keys that only make sense together, checked after the walk. */
void pol_sockets_check(struct pol_ctx *c, yaml_node_t *root);

/* pol_fleet.c */
extern const struct pol_field pol_fleet_fields[];
pol_handler_fn pol_h_fleet;
/* pol_ha.c */
extern const struct pol_field pol_ha_fields[];	/* ha:, walked by pol_h_map */
/* ha:'s keys that need each other (guard: required needs priority and sync_key_file). */
void pol_ha_check(struct pol_ctx *c, yaml_node_t *root);

/* pol_policy.c */
extern const struct pol_field pol_policy_fields[];
pol_handler_fn pol_h_policies;

/* pol_vm.c */
extern const struct pol_field pol_vm_fields[];
pol_handler_fn pol_h_vms;
int pol_vms_resolve(struct pol_ctx *c);

/* pol_explain.c */
void pol_rule_where(FILE *out, const struct pol_rule *r);

/* pol_import.c */
int pol_import(struct pol_ctx *c, yaml_node_t *n, const char *rel, const char *path);
/*
 * An ask: pattern (key[index]) into c->ask_b: a host name or wildcard without a port,
 * since what waits is a DNS question, and approving it grants the name on every port.
 */
int pol_add_ask(struct pol_ctx *c, yaml_node_t *n, const char *key, uint32_t index);
int pol_add_pattern(struct pol_ctx *c, yaml_node_t *n, const char *key, uint32_t index,
    enum pol_list list, bool imported);

#endif /* POL_LOAD_INT_H */
